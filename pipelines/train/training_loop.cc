#include "pipelines/train/training_loop.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <optional>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "base/common/digest.h"
#include "base/common/file_io.h"
#include "base/common/status_macros.h"
#include "google/protobuf/text_format.h"
#include "models/checkpoints/checkpoint.h"
#include "pipelines/train/flat_adamw.h"
#include "pipelines/train/lr_schedule.h"

namespace sparse_layers::train {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

std::string FormatDuration(double seconds) {
  const int64_t total = static_cast<int64_t>(seconds);
  return absl::StrFormat("%d:%02d:%02d", total / 3600, total / 60 % 60,
                         total % 60);
}

// AdamW (Loshchilov & Hutter 2019) over flat buffers; no weight decay on 1-D
// parameters (norm gains, biases), as in GPT-2 / nanoGPT.
absl::StatusOr<std::unique_ptr<FlatAdamW>> MakeOptimizer(
    const std::vector<torch::Tensor>& parameters,
    const config::OptimizerConfig& config) {
  FlatAdamWGroup decayed{{}, config.weight_decay()}, not_decayed{{}, 0};
  for (const torch::Tensor& parameter : parameters) {
    (parameter.dim() >= 2 ? decayed : not_decayed)
        .parameters.push_back(parameter);
  }
  FlatAdamWOptions options;
  options.learning_rate = config.learning_rate();
  options.beta1 = config.beta1() > 0 ? config.beta1() : 0.9;
  options.beta2 = config.beta2() > 0 ? config.beta2() : 0.95;
  options.epsilon = config.epsilon() > 0 ? config.epsilon() : 1e-8;
  return FlatAdamW::Create({std::move(decayed), std::move(not_decayed)},
                           options);
}

// Mean of the last 10% of the training losses (the summary's final loss).
double TailMean(const std::vector<double>& losses) {
  if (losses.empty()) return 0;
  const size_t tail = std::max<size_t>(1, losses.size() / 10);
  double sum = 0;
  for (size_t i = losses.size() - tail; i < losses.size(); ++i) {
    sum += losses[i];
  }
  return sum / tail;
}

// The loss column (the 4th) of a CSV log: the log is in every checkpoint, so
// a resumed run averages the same steps as an uninterrupted one.
std::vector<double> LoggedTrainLosses(const std::string& log_csv) {
  std::vector<double> losses;
  for (absl::string_view line : absl::StrSplit(log_csv, '\n')) {
    const std::vector<absl::string_view> fields = absl::StrSplit(line, ',');
    double loss = 0;
    // The header and blank lines do not parse.
    if (fields.size() > 3 && absl::SimpleAtod(fields[3], &loss)) {
      losses.push_back(loss);
    }
  }
  return losses;
}

// A finished run being resumed: its published summary when that records the
// checkpoint's digest, kept rather than rewritten with this process's
// near-zero wall time.
std::optional<TrainingSummary> KeptSummary(const TrainerOptions& options) {
  const std::string& path = options.published_summary_path.empty()
                                ? options.summary_path
                                : options.published_summary_path;
  if (path.empty()) return std::nullopt;
  absl::StatusOr<std::string> text = ReadFileToString(path);
  TrainingSummary summary;
  if (!text.ok() ||
      !google::protobuf::TextFormat::ParseFromString(*text, &summary)) {
    return std::nullopt;
  }
  absl::StatusOr<std::string> digest = Sha256OfFile(options.checkpoint_path);
  if (!digest.ok() || *digest != summary.checkpoint_sha256()) {
    return std::nullopt;
  }
  return summary;
}

// Trainer binary and parent digests, build identity lines.
absl::Status RecordProvenance(const TrainerOptions& options,
                              TrainingSummary& summary) {
  ASSIGN_OR_RETURN(const std::string trainer, Sha256OfFile("/proc/self/exe"));
  summary.set_trainer_sha256(trainer);
  if (!options.init_from.empty()) {
    ASSIGN_OR_RETURN(const std::string parent, Sha256OfFile(options.init_from));
    summary.set_init_from_sha256(parent);
  }
  if (options.build_identity_path.empty()) return absl::OkStatus();
  ASSIGN_OR_RETURN(const std::string identity,
                   ReadFileToString(options.build_identity_path));
  for (absl::string_view line :
       absl::StrSplit(identity, '\n', absl::SkipEmpty())) {
    summary.add_build_identity(std::string(line));
  }
  return absl::OkStatus();
}

// Saves the final checkpoint (at options.final_checkpoint_path when set),
// records its digest and provenance in `summary`, and writes the CSV log and
// the summary where `options` asks.
absl::Status WriteRunOutputs(const TrainerOptions& options,
                             const torch::nn::Module& model,
                             const layers::AdamWState& optimizer,
                             const layers::CheckpointState& state,
                             TrainingSummary& summary) {
  const std::string& path = options.final_checkpoint_path.empty()
                                ? options.checkpoint_path
                                : options.final_checkpoint_path;
  RETURN_IF_ERROR(layers::SaveCheckpoint(path, model, &optimizer, state));
  ASSIGN_OR_RETURN(const std::string digest, Sha256OfFile(path));
  summary.set_checkpoint_sha256(digest);
  RETURN_IF_ERROR(RecordProvenance(options, summary));
  if (!options.log_csv_path.empty()) {
    RETURN_IF_ERROR(WriteFileAtomically(options.log_csv_path, state.log_csv));
  }
  if (options.summary_path.empty()) return absl::OkStatus();
  std::string text;
  google::protobuf::TextFormat::PrintToString(summary, &text);
  return WriteFileAtomically(options.summary_path, text);
}

}  // namespace

StepBudget ComputeStepBudget(const config::BudgetConfig& budget,
                             int64_t units_per_step,
                             int64_t forward_flops_per_unit) {
  StepBudget result{std::numeric_limits<int64_t>::max(), ""};
  auto limit = [&](int64_t steps, const char* name) {
    if (steps < result.steps) result = {steps, name};
  };
  if (budget.max_steps() > 0) limit(budget.max_steps(), "max_steps");
  if (budget.max_tokens() > 0) {
    limit(budget.max_tokens() / units_per_step, "max_tokens");
  }
  if (budget.max_flops() > 0) {
    // Training FLOPs per step: 3 x forward (backward costs twice the forward).
    const double per_step =
        3.0 * static_cast<double>(forward_flops_per_unit) * units_per_step;
    limit(static_cast<int64_t>(std::floor(budget.max_flops() / per_step)),
          "max_flops");
  }
  return result;
}

absl::StatusOr<TrainingSummary> RunTrainingLoop(
    const config::ExperimentConfig& config, const TrainerOptions& options,
    torch::nn::Module& model, TrainingObjective& objective) {
  const int64_t units_per_step = objective.units_per_step();
  const int64_t forward_flops = objective.forward_flops_per_unit();
  const StepBudget budget =
      ComputeStepBudget(config.budget(), units_per_step, forward_flops);
  if (budget.steps <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the budget (", budget.stopped_by, ") is smaller than one step of ",
        units_per_step, " ", objective.unit()));
  }

  std::string config_text;
  google::protobuf::TextFormat::PrintToString(config, &config_text);
  layers::CheckpointState state;
  state.config_text = config_text;
  state.log_csv = absl::StrCat(
      "step,", objective.unit(), ",learning_rate,train_", objective.loss_name(),
      ",grad_norm,validation_", objective.loss_name(), "\n");
  std::vector<torch::Tensor> parameters = objective.TrainableParameters();
  layers::AdamWState restored_optimizer;
  if (options.resume && std::filesystem::exists(options.checkpoint_path)) {
    ASSIGN_OR_RETURN(layers::CheckpointState restored,
                     layers::LoadCheckpoint(options.checkpoint_path, model,
                                            &restored_optimizer));
    if (restored.config_text != config_text) {
      return absl::FailedPreconditionError(absl::StrCat(
          options.checkpoint_path,
          " was written with a different config; remove it or drop --resume"));
    }
    state = std::move(restored);
    std::fprintf(stderr, "train: resuming %s at step %lld\n",
                 config.name().c_str(), static_cast<long long>(state.step));
    if (state.step >= budget.steps) {
      if (std::optional<TrainingSummary> kept = KeptSummary(options)) {
        return *kept;
      }
    }
  } else {
    RETURN_IF_ERROR(objective.Initialize());
  }
  // Built after initialisation, which may replace parameter data.
  ASSIGN_OR_RETURN(std::unique_ptr<FlatAdamW> optimizer,
                   MakeOptimizer(parameters, config.optimizer()));
  if (absl::Status loaded = optimizer->LoadState(restored_optimizer);
      !loaded.ok()) {
    return absl::DataLossError(
        absl::StrCat(options.checkpoint_path, ": ", loaded.message()));
  }

  // The step after which each snapshot is taken; one a resumed run has passed
  // must be on disk already.
  std::vector<int64_t> snapshot_steps;
  for (const TrainerOptions::Snapshot& snapshot : options.snapshots) {
    const int64_t at = std::clamp<int64_t>(
        std::llround(snapshot.fraction * budget.steps), 1, budget.steps);
    if (at <= state.step && !std::filesystem::exists(snapshot.path)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "resuming at step ", state.step, " past the snapshot of step ", at,
          ", which is not at ", snapshot.path, "; train again from scratch"));
    }
    snapshot_steps.push_back(at);
  }
  const int eval_every = config.eval().every_steps();
  const int checkpoint_every = config.runtime().checkpoint_every_steps();
  const double clip = config.optimizer().gradient_clip_norm();
  const auto start_time = Clock::now();
  auto last_progress = start_time;
  auto last_checkpoint = start_time;
  const int64_t first_step = state.step;
  double validation_loss = std::nan("");
  objective.StartTraining();

  for (int64_t step = state.step; step < budget.steps; ++step) {
    const double lr =
        LearningRate(config.schedule(), config.optimizer().learning_rate(),
                     step, budget.steps);
    optimizer->set_learning_rate(lr);
    optimizer->ZeroGrad();
    torch::Tensor loss = objective.Loss(step);
    const double loss_value = loss.item<double>();
    if (!std::isfinite(loss_value)) {
      return absl::InternalError(
          absl::StrCat("training ", objective.loss_name(), " is ", loss_value,
                       " at step ", step, " (lr ", lr,
                       "); lower optimizer.learning_rate or check the data"));
    }
    loss.backward();
    objective.AdjustGradients();
    const double grad_norm = optimizer->ClipGradNorm(clip);
    optimizer->Step();
    state.step = step + 1;

    const bool last = state.step == budget.steps;
    std::string validation_field;
    if (last || (eval_every > 0 && state.step % eval_every == 0)) {
      validation_loss = objective.Validate();
      validation_field = absl::StrFormat("%.6f", validation_loss);
    }
    absl::StrAppendFormat(&state.log_csv, "%d,%d,%.6e,%.6f,%.6f,%s\n",
                          state.step, state.step * units_per_step, lr,
                          loss_value, grad_norm, validation_field);

    const auto now = Clock::now();
    const double elapsed = Seconds(start_time, now);
    if (last || !validation_field.empty() ||
        Seconds(last_progress, now) >= options.progress_every_seconds) {
      last_progress = now;
      const double steps_done = static_cast<double>(state.step - first_step);
      std::fprintf(
          stderr,
          "train: step %lld/%lld %s %.4f%s lr %.2e | %.0f %s/s | ETA %s\n",
          static_cast<long long>(state.step),
          static_cast<long long>(budget.steps),
          std::string(objective.loss_name()).c_str(), loss_value,
          validation_field.empty()
              ? ""
              : absl::StrCat(" val ", validation_field).c_str(),
          lr, steps_done * units_per_step / elapsed,
          std::string(objective.unit()).c_str(),
          FormatDuration(elapsed / steps_done * (budget.steps - state.step))
              .c_str());
    }
    for (size_t i = 0; i < snapshot_steps.size(); ++i) {
      if (snapshot_steps[i] == state.step) {
        RETURN_IF_ERROR(layers::SaveCheckpoint(options.snapshots[i].path, model,
                                               /*optimizer=*/nullptr, state));
      }
    }
    const bool checkpoint_due =
        (checkpoint_every > 0 && state.step % checkpoint_every == 0) ||
        (options.checkpoint_every_seconds > 0 &&
         Seconds(last_checkpoint, now) >= options.checkpoint_every_seconds);
    if (!last && checkpoint_due) {
      last_checkpoint = now;
      const layers::AdamWState optimizer_state = optimizer->State();
      RETURN_IF_ERROR(layers::SaveCheckpoint(options.checkpoint_path, model,
                                             &optimizer_state, state));
    }
  }
  const double wall = Seconds(start_time, Clock::now());
  objective.FinishTraining();
  if (std::isnan(validation_loss)) {  // Resumed at the very end.
    validation_loss = objective.Validate();
  }

  TrainingSummary summary;
  summary.set_name(config.name());
  summary.set_steps(state.step);
  summary.set_tokens(state.step * units_per_step);
  summary.set_forward_flops_per_token(forward_flops);
  summary.set_flops(3.0 * forward_flops * summary.tokens());
  summary.set_final_train_loss(TailMean(LoggedTrainLosses(state.log_csv)));
  summary.set_wall_seconds(wall);
  summary.set_tokens_per_second((state.step - first_step) * units_per_step /
                                std::max(wall, 1e-9));
  summary.set_threads(torch::get_num_threads());
  summary.set_stopped_by(budget.stopped_by);
  summary.set_config_sha256(Sha256Hex(config_text));
  summary.set_train_data_sha256(Sha256Hex(objective.train_data_manifest()));
  summary.set_validation_loss(validation_loss);
  RETURN_IF_ERROR(objective.Summarize(summary));
  RETURN_IF_ERROR(
      WriteRunOutputs(options, model, optimizer->State(), state, summary));
  return summary;
}

}  // namespace sparse_layers::train
