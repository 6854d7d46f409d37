// evaluate_lorsa: the tables of analysis/attention/lorsa_evaluation.h
// (fits.csv, attribution.csv, attribution_shares.csv, heads.csv,
// probe_heads.csv, probe.csv, induction_heads.csv, errors.csv,
// qk_spectra.csv, qk_rank.csv, qk_rank_summary.csv, operand_heads.csv,
// operand_summary.csv, operand_grid.csv, top_activations.txt; with
// --fits_only fits.csv alone) for fitted Lorsa layers and attention-output
// SAEs of one base model.
//
//   evaluate_lorsa --base=lm.pt --tokens=.../test.tokens.textproto
//       --tokenizer=bpe.model --caches=1=.../test.activations.textproto,...
//       --out_dir=DIR lorsa_l1_k8.pt sae_l1_k8.pt ...
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "analysis/attention/lorsa_evaluation.h"
#include "base/common/cpu_slots.h"
#include "base/common/file_io.h"
#include "base/common/keyed_paths.h"
#include "base/common/staged_outputs.h"
#include "base/common/status_macros.h"
#include "datasets/text/shard_pairing.h"
#include "datasets/text/token_shards.h"
#include "datasets/text/tokenizer.h"
#include "models/model_loader.h"
#include "ops/backend/torch_init.h"
#include "pipelines/activations/activation_shards.h"

ABSL_FLAG(std::string, base, "", "The base model (.pt)");
ABSL_FLAG(std::string, tokens, "", "Held-out token split (manifest)");
ABSL_FLAG(std::string, tokenizer, "",
          "The base model's tokenizer (probe words, listings)");
ABSL_FLAG(std::vector<std::string>, caches, {},
          "block=test attention-cache manifest, one per fitted block");
ABSL_FLAG(int, batches, 16, "CE evaluation batches of 16 windows");
ABSL_FLAG(int64_t, windows, 256, "Cache windows for FVU, l0 and dead heads");
ABSL_FLAG(int64_t, attribution_windows, 32, "Cache windows for attribution");
ABSL_FLAG(int64_t, min_active, 20, "Active tokens for a head's attribution");
ABSL_FLAG(int, probe_sequences, 64, "Repeated-span probe sequences");
ABSL_FLAG(int, probe_period, 16, "Length of the repeated random span");
ABSL_FLAG(std::string, probe_words, "",
          "Optional: the words the base LM's repeated spans were drawn from, "
          "one per line (build_synthetic_documents --span_words_out); the "
          "probe draws from them instead of every word-initial piece");
ABSL_FLAG(int, listing_windows, 64, "Held-out windows for top activations");
ABSL_FLAG(int, sequence_length, 0,
          "Window length for CE and listings (0: the base model's context)");
ABSL_FLAG(bool, fits_only, false,
          "Write fits.csv alone (a sweep of one block's Lorsa shape, e.g. the "
          "QK-head binding of Lorsa App. B, Fig. 9)");
ABSL_FLAG(std::string, out_dir, "", "Where the outputs go");

namespace sparse_layers::analysis {
namespace {

// --caches entries "block=manifest".
absl::StatusOr<std::map<int, std::unique_ptr<datasets::ActivationSet>>>
OpenCaches(const std::vector<std::string>& entries) {
  ASSIGN_OR_RETURN(const std::vector<KeyedPath> paths,
                   KeyedPaths("caches", "block", entries));
  std::map<int, std::unique_ptr<datasets::ActivationSet>> caches;
  for (const auto& [key, path] : paths) {
    int block = -1;
    if (!absl::SimpleAtoi(key, &block)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--caches entry '", key, "=", path, "': expected block=path"));
    }
    ASSIGN_OR_RETURN(caches[block], datasets::ActivationSet::Open(path));
  }
  return caches;
}

absl::Status Run(const std::vector<std::string>& paths) {
  RETURN_IF_ERROR(FirstError(
      {RequiredFile(FLAGS_base), RequiredFile(FLAGS_tokens),
       RequiredFile(FLAGS_tokenizer), RequiredFlag(FLAGS_out_dir),
       FlagAtLeast(FLAGS_batches, 1), FlagAtLeast(FLAGS_windows, 1),
       FlagAtLeast(FLAGS_attribution_windows, 1),
       FlagAtLeast(FLAGS_min_active, 0), FlagAtLeast(FLAGS_probe_sequences, 1),
       FlagAtLeast(FLAGS_probe_period, 1),
       FlagAtLeast(FLAGS_listing_windows, 1),
       FlagAtLeast(FLAGS_sequence_length, 0),
       FitsGiven("evaluate_lorsa", "Lorsa fit", paths)}));
  RETURN_IF_ERROR(AcquireCpuSlotIfRequested(absl::GetFlag(FLAGS_threads)));
  ASSIGN_OR_RETURN(const layers::LoadedModel base,
                   layers::LoadModel(absl::GetFlag(FLAGS_base)));
  std::string error;
  auto tok = datasets::Tokenizer::Load(absl::GetFlag(FLAGS_tokenizer), &error);
  if (!tok) return absl::InvalidArgumentError(error);
  ASSIGN_OR_RETURN(auto tokens,
                   datasets::TokenShardSet::Open(absl::GetFlag(FLAGS_tokens)));
  RETURN_IF_ERROR(
      datasets::CheckEncodedWith(*tokens, absl::GetFlag(FLAGS_tokenizer)));
  RETURN_IF_ERROR(datasets::CheckFitsModelVocabulary(
      *tokens, base.model->options().vocab_size, absl::GetFlag(FLAGS_base)));
  ASSIGN_OR_RETURN(auto caches, OpenCaches(absl::GetFlag(FLAGS_caches)));
  ASSIGN_OR_RETURN(std::vector<analysis::LorsaFit> fits,
                   analysis::LoadLorsaFits(paths));
  analysis::LorsaEvaluationOptions options;
  options.batches = absl::GetFlag(FLAGS_batches);
  options.windows = absl::GetFlag(FLAGS_windows);
  options.attribution_windows = absl::GetFlag(FLAGS_attribution_windows);
  options.min_active = absl::GetFlag(FLAGS_min_active);
  options.probe_sequences = absl::GetFlag(FLAGS_probe_sequences);
  options.probe_period = absl::GetFlag(FLAGS_probe_period);
  options.probe_words = absl::GetFlag(FLAGS_probe_words);
  options.listing_windows = absl::GetFlag(FLAGS_listing_windows);
  options.sequence_length = absl::GetFlag(FLAGS_sequence_length);
  options.fits_only = absl::GetFlag(FLAGS_fits_only);
  ASSIGN_OR_RETURN(
      const analysis::LorsaTables tables,
      analysis::EvaluateLorsa(base, *tok, *tokens, caches, fits, options));

  const std::string dir = absl::GetFlag(FLAGS_out_dir);
  // fits.csv first: --fits_only writes it alone.
  const std::pair<absl::string_view, absl::string_view> files[] = {
      {"fits.csv", tables.fits},
      {"attribution.csv", tables.attribution},
      {"attribution_shares.csv", tables.attribution_shares},
      {"heads.csv", tables.heads},
      {"probe_heads.csv", tables.probe_heads},
      {"probe.csv", tables.probe},
      {"induction_heads.csv", tables.induction_heads},
      {"errors.csv", tables.errors},
      {"qk_spectra.csv", tables.qk_spectra},
      {"qk_rank.csv", tables.qk_rank},
      {"qk_rank_summary.csv", tables.qk_rank_summary},
      {"operand_heads.csv", tables.operand_heads},
      {"operand_summary.csv", tables.operand_summary},
      {"operand_grid.csv", tables.operand_grid},
      {"top_activations.txt", tables.top_activations}};
  return StagedOutputs().WriteFilesAndCommit(
      dir, absl::MakeConstSpan(files).subspan(
               0, options.fits_only ? 1 : std::size(files)));
}

}  // namespace
}  // namespace sparse_layers::analysis

int main(int argc, char** argv) {
  const std::vector<std::string> fits = sparse_layers::InitMain(
      argc, argv,
      "evaluate_lorsa --base=lm.pt --tokens=T --tokenizer=M --caches=L=C,... "
      "--out_dir=DIR fit.pt...");
  return sparse_layers::RunMain(
      [&] { return sparse_layers::analysis::Run(fits); });
}
