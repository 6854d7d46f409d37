// The command line of the trainer's binaries (train_main.cc: an LM on token
// shards; fit_main.cc: a replacement layer on an activation cache): flags,
// staged outputs, the resume store, one objective's run.
//
//   train --config=base.textproto[,overlay.textproto] --out=model.pt
//         --train_data=.../train.tokens.textproto
//         --validation_data=.../validation.tokens.textproto [--resume]
//   or, resumable after a kill (build actions; pipelines/train/resume_store.h):
//   train ... --resume_dir=~/.cache/sparse_layers/resume
//         --checkpoint_every_seconds=300
//   or, to fit model.replacement on an activation cache:
//   fit --config=... --out=tc.pt --init_from=base.pt
//       --train_activations=.../train.activations.textproto
//       --validation_activations=.../validation.activations.textproto
#include "pipelines/train/train_command.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "base/common/cpu_slots.h"
#include "base/common/file_io.h"
#include "base/common/output_paths.h"
#include "base/common/staged_outputs.h"
#include "base/common/status_macros.h"
#include "config/config_loader.h"
#include "ops/backend/torch_init.h"
#include "pipelines/train/resume_store.h"
#include "pipelines/train/train_command.h"
#include "pipelines/train/trainer.h"

ABSL_FLAG(std::vector<std::string>, config, {},
          "Config textproto(s), later ones refining earlier ones");
ABSL_FLAG(std::string, train_data, "",
          "Train token-shard manifest (overrides data.train_manifest)");
ABSL_FLAG(std::string, validation_data, "",
          "Validation token-shard manifest (overrides "
          "data.validation_manifest)");
ABSL_FLAG(std::string, out, "", "Checkpoint path");
ABSL_FLAG(std::string, log_csv, "", "CSV log path (default: <out>.csv)");
ABSL_FLAG(std::string, summary, "",
          "Summary textproto path (default: <out>.summary.textproto)");
ABSL_FLAG(bool, resume, false, "Continue from --out when it exists");
ABSL_FLAG(std::string, resume_dir, "",
          "Keep periodic checkpoints in this store, under a key of the run's "
          "inputs, and continue from the one a killed run of the same inputs "
          "left (\"~/\" is the user's home)");
ABSL_FLAG(std::vector<std::string>, snapshots, {},
          "fraction:path,...: also keep the model after round(fraction * "
          "steps) steps at path, fraction in (0, 1) (metrics over training)");
ABSL_FLAG(double, checkpoint_every_seconds, 0,
          "Also checkpoint after this much wall time (0: only every "
          "runtime.checkpoint_every_steps)");
ABSL_FLAG(std::string, init_from, "",
          "Parent checkpoint to start from (copy / upcycle; config.init)");
ABSL_FLAG(std::string, train_activations, "",
          "Fitting mode: activation-cache manifest of the training rows "
          "(model.replacement is fitted; --init_from is the base model)");
ABSL_FLAG(std::string, validation_activations, "",
          "Fitting mode: activation-cache manifest of the validation rows");

ABSL_FLAG(std::string, build_identity, "",
          "@build_identity//:identity.txt (LibTorch, BLAS, compiler), recorded "
          "in the summary");

namespace sparse_layers::train {
namespace {

// The flags naming input files besides --config, in a fixed order.
const absl::Flag<std::string>* const kInputFileFlags[] = {
    &FLAGS_train_data,
    &FLAGS_validation_data,
    &FLAGS_init_from,
    &FLAGS_train_activations,
    &FLAGS_validation_activations,
    &FLAGS_build_identity};

// What shapes a run's numbers and outputs besides its input files' bytes
// (resume key): the thread count, which inputs are given (the mode) and the
// snapshots' fractions (the store keeps snapshots by position).
std::vector<std::string> ResumeArguments(
    int threads, const std::vector<TrainerOptions::Snapshot>& snapshots) {
  std::vector<std::string> arguments = {absl::StrCat("threads=", threads)};
  for (const auto* flag : kInputFileFlags) {
    arguments.push_back(absl::GetFlag(*flag).empty() ? "-" : "+");
  }
  for (const TrainerOptions::Snapshot& snapshot : snapshots) {
    // The fraction exactly (StrCat keeps 6 significant digits).
    arguments.push_back(absl::StrFormat("snapshot=%.17g", snapshot.fraction));
  }
  return arguments;
}

// --snapshots as (fraction, published path) pairs.
absl::StatusOr<std::vector<TrainerOptions::Snapshot>> ParseSnapshots() {
  std::vector<TrainerOptions::Snapshot> snapshots;
  for (const std::string& item : absl::GetFlag(FLAGS_snapshots)) {
    const std::vector<std::string> parts =
        absl::StrSplit(item, absl::MaxSplits(':', 1));
    TrainerOptions::Snapshot snapshot;
    if (parts.size() != 2 || parts[1].empty() ||
        !absl::SimpleAtod(parts[0], &snapshot.fraction) ||
        !(snapshot.fraction > 0 && snapshot.fraction < 1)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--snapshots: '", item,
                       "' is not fraction:path, fraction in (0, 1)"));
    }
    snapshot.path = parts[1];
    snapshots.push_back(snapshot);
  }
  return snapshots;
}

// The input files, in a fixed order: config layers, then data and parents.
std::vector<std::string> ResumeFiles() {
  std::vector<std::string> files = absl::GetFlag(FLAGS_config);
  for (const auto* flag : kInputFileFlags) {
    if (!absl::GetFlag(*flag).empty()) files.push_back(absl::GetFlag(*flag));
  }
  return files;
}

}  // namespace

absl::Status RunTrainCommand(const TrainCommand& command) {
  RETURN_IF_ERROR(
      FirstError({RequiredFlag(FLAGS_out), RequiredFile(FLAGS_config)}));
  for (const auto* flag : kInputFileFlags) {
    RETURN_IF_ERROR(FlagFilesExist(*flag));
  }
  if (absl::GetFlag(FLAGS_resume) && !absl::GetFlag(FLAGS_resume_dir).empty()) {
    return absl::InvalidArgumentError(
        "--resume continues --out, --resume_dir its own store: give one");
  }
  ASSIGN_OR_RETURN(std::vector<TrainerOptions::Snapshot> snapshots,
                   ParseSnapshots());
  const std::string out = absl::GetFlag(FLAGS_out);
  // An output naming an input (--out=parent.pt --init_from=parent.pt) would
  // replace it.
  std::vector<std::pair<std::string, std::string>> output_flags = {
      {"--out", out},
      {"--log_csv", absl::GetFlag(FLAGS_log_csv)},
      {"--summary", absl::GetFlag(FLAGS_summary)}};
  for (const TrainerOptions::Snapshot& snapshot : snapshots) {
    output_flags.push_back({"--snapshots", snapshot.path});
  }
  for (const auto& [flag, path] : output_flags) {
    RETURN_IF_ERROR(OutputIsNotAnInput(flag, path, ResumeFiles()));
  }
  // Locked for the whole run (a second training on --out fails at once) and
  // checked before it; the final checkpoint, log and summary appear together.
  // Periodic checkpoints still go to --out, for --resume.
  StagedOutputs outputs;
  auto checkpoint = outputs.StageFile(out);
  auto log_csv = outputs.StageFile(absl::GetFlag(FLAGS_log_csv).empty()
                                       ? out + ".csv"
                                       : absl::GetFlag(FLAGS_log_csv));
  auto summary_path = outputs.StageFile(absl::GetFlag(FLAGS_summary).empty()
                                            ? out + ".summary.textproto"
                                            : absl::GetFlag(FLAGS_summary));
  for (const auto* staged : {&checkpoint, &log_csv, &summary_path}) {
    if (!staged->ok()) return staged->status();
  }
  ASSIGN_OR_RETURN(const config::ExperimentConfig config,
                   config::LoadExperimentConfig(absl::GetFlag(FLAGS_config)));
  const int threads = config.runtime().threads() > 0
                          ? config.runtime().threads()
                          : absl::GetFlag(FLAGS_threads);
  RETURN_IF_ERROR(AcquireCpuSlotIfRequested(threads));
  std::optional<ResumeEntry> resume_entry =
      absl::GetFlag(FLAGS_resume_dir).empty()
          ? std::nullopt
          : OpenResumeEntry(absl::GetFlag(FLAGS_resume_dir), "/proc/self/exe",
                            ResumeArguments(threads, snapshots), ResumeFiles());
  TrainerOptions options;
  options.train_manifest = absl::GetFlag(FLAGS_train_data);
  options.validation_manifest = absl::GetFlag(FLAGS_validation_data);
  options.checkpoint_path =
      resume_entry ? resume_entry->checkpoint_path() : out;
  options.checkpoint_every_seconds =
      absl::GetFlag(FLAGS_checkpoint_every_seconds);
  options.final_checkpoint_path = *checkpoint;
  options.log_csv_path = *log_csv;
  options.summary_path = *summary_path;
  options.published_summary_path = absl::GetFlag(FLAGS_summary).empty()
                                       ? out + ".summary.textproto"
                                       : absl::GetFlag(FLAGS_summary);
  options.resume = absl::GetFlag(FLAGS_resume) || resume_entry.has_value();
  options.init_from = absl::GetFlag(FLAGS_init_from);
  options.train_activations = absl::GetFlag(FLAGS_train_activations);
  options.validation_activations = absl::GetFlag(FLAGS_validation_activations);
  options.build_identity_path = absl::GetFlag(FLAGS_build_identity);
  // Snapshots are taken where periodic checkpoints go (the store, else their
  // own paths); from the store they join the staged outputs at the end.
  options.snapshots = snapshots;
  for (size_t i = 0; i < snapshots.size() && resume_entry; ++i) {
    options.snapshots[i].path = resume_entry->SnapshotPath(i);
  }
  ASSIGN_OR_RETURN(const TrainingSummary summary,
                   Train(config, options, command.make_objective));
  for (size_t i = 0; i < snapshots.size() && resume_entry; ++i) {
    ASSIGN_OR_RETURN(const std::string bytes,
                     ReadFileToString(options.snapshots[i].path));
    RETURN_IF_ERROR(outputs.WriteFile(snapshots[i].path, bytes));
  }
  // --resume of a finished run keeps its published outputs and writes none:
  // its staged summary is still the empty file staging created.
  ASSIGN_OR_RETURN(const std::string staged_summary,
                   ReadFileToString(*summary_path));
  if (!staged_summary.empty()) RETURN_IF_ERROR(outputs.Commit());
  if (resume_entry) {
    if (absl::Status removed = resume_entry->Remove(); !removed.ok()) {
      std::fprintf(stderr, "%s: %s\n", std::string(command.program).c_str(),
                   std::string(removed.message()).c_str());
    }
  }
  const std::string perplexity =
      command.perplexity ? absl::StrFormat(" (perplexity %.2f)",
                                           summary.validation_perplexity())
                         : "";
  const std::string unit(command.unit);
  std::fprintf(stderr,
               "%s: %s: %lld steps, %lld %s (%s), validation loss %.4f%s, "
               "%.0f %s/s\n",
               std::string(command.program).c_str(), summary.name().c_str(),
               static_cast<long long>(summary.steps()),
               static_cast<long long>(summary.tokens()), unit.c_str(),
               summary.objective().c_str(), summary.validation_loss(),
               perplexity.c_str(), summary.tokens_per_second(), unit.c_str());
  return absl::OkStatus();
}

}  // namespace sparse_layers::train
