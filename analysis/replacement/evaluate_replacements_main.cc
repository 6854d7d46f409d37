// evaluate_replacements: the MxD sparsity-accuracy frontier of fitted
// replacement layers (analysis/replacement/replacement_frontier.h; MxD
// arXiv:2505.21364 Sec. 3.1, Figs. 3 and 10, Table 3): one CSV row per
// replacement checkpoint, with the base model's CE and its zero-ablated CE.
//
//   evaluate_replacements --base=lm.pt --tokens=.../test.tokens.textproto
//       --activations=.../test.activations.textproto --out=frontier.csv
//       --unit_frequencies_out=units.csv
//       tc_k8.pt mxd_k8.pt ...
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "analysis/replacement/replacement_frontier.h"
#include "base/common/cpu_slots.h"
#include "base/common/file_io.h"
#include "base/common/staged_outputs.h"
#include "base/common/status_macros.h"
#include "datasets/text/shard_pairing.h"
#include "datasets/text/token_shards.h"
#include "models/model_loader.h"
#include "ops/backend/torch_init.h"
#include "pipelines/activations/activation_shards.h"

ABSL_FLAG(std::string, base, "", "The base model (.pt)");
ABSL_FLAG(std::string, base_name, "base", "The base model's name in the CSV");
ABSL_FLAG(std::string, tokens, "", "Held-out token split (manifest)");
ABSL_FLAG(std::string, activations, "",
          "Held-out activation cache of the base model (manifest)");
ABSL_FLAG(int, batches, 16, "CE evaluation batches");
ABSL_FLAG(int, batch_size, 16, "Windows per CE batch");
ABSL_FLAG(int64_t, rows, 32768, "Activation rows for NMSE, l0 and dead units");
ABSL_FLAG(int, rank_experts, 64, "MxD experts sampled for the rank");
ABSL_FLAG(std::string, out, "", "CSV path");
ABSL_FLAG(std::string, unit_frequencies_out, "",
          "CSV of each fit's unit firing-frequency histogram (MxD Fig. 20)");

namespace sparse_layers::analysis {
namespace {

absl::Status Run(const std::vector<std::string>& replacements) {
  RETURN_IF_ERROR(FirstError(
      {RequiredFile(FLAGS_base), RequiredFile(FLAGS_tokens),
       RequiredFile(FLAGS_activations), RequiredFlag(FLAGS_out),
       RequiredFlag(FLAGS_unit_frequencies_out), FlagAtLeast(FLAGS_batches, 1),
       FlagAtLeast(FLAGS_batch_size, 1), FlagAtLeast(FLAGS_rows, 1),
       FlagAtLeast(FLAGS_rank_experts, 1),
       FitsGiven("evaluate_replacements", "fitted layer", replacements)}));
  RETURN_IF_ERROR(AcquireCpuSlotIfRequested(absl::GetFlag(FLAGS_threads)));
  ASSIGN_OR_RETURN(layers::LoadedModel base,
                   layers::LoadModel(absl::GetFlag(FLAGS_base)));
  ASSIGN_OR_RETURN(const auto tokens,
                   datasets::TokenShardSet::Open(absl::GetFlag(FLAGS_tokens)));
  RETURN_IF_ERROR(datasets::CheckFitsModelVocabulary(
      *tokens, base.model->options().vocab_size, absl::GetFlag(FLAGS_base)));
  ASSIGN_OR_RETURN(
      const auto activations,
      datasets::ActivationSet::Open(absl::GetFlag(FLAGS_activations)));
  ReplacementFrontierOptions options;
  options.base_name = absl::GetFlag(FLAGS_base_name);
  options.batches = absl::GetFlag(FLAGS_batches);
  options.batch_size = absl::GetFlag(FLAGS_batch_size);
  options.rows = absl::GetFlag(FLAGS_rows);
  options.rank_experts = absl::GetFlag(FLAGS_rank_experts);
  ASSIGN_OR_RETURN(
      const ReplacementFrontierTables tables,
      EvaluateReplacements(base, absl::GetFlag(FLAGS_base), *tokens,
                           *activations, replacements, options));
  StagedOutputs outputs;  // Both tables or neither.
  RETURN_IF_ERROR(outputs.WriteFile(absl::GetFlag(FLAGS_out), tables.frontier));
  RETURN_IF_ERROR(outputs.WriteFile(absl::GetFlag(FLAGS_unit_frequencies_out),
                                    tables.unit_frequencies));
  return outputs.Commit();
}

}  // namespace
}  // namespace sparse_layers::analysis

int main(int argc, char** argv) {
  const std::vector<std::string> replacements = sparse_layers::InitMain(
      argc, argv, "Evaluates fitted replacement layers (CE, NMSE, l0, rank).");
  return sparse_layers::RunMain(
      [&] { return sparse_layers::analysis::Run(replacements); });
}
