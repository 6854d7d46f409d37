// ffn_ablation: what each block's FFN is worth to a language model: held-out
// next-token CE with that FFN's output zeroed, minus the intact model's CE
// (MxD arXiv:2505.21364 Sec. 3.1's zero-ablation baseline, per block). A
// replacement layer can only be told apart from another at a block whose FFN
// matters, so the MxD experiments read this table to choose the block. The
// seed column is the model's runtime.seed (one model: n = 1).
//
//   ffn_ablation --base=lm.pt --base_name=gelu
//       --tokens=.../test.tokens.textproto --out=ablation.csv
#include <torch/torch.h>

#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "analysis/replacement/ffn_ablation.h"
#include "base/common/cpu_slots.h"
#include "base/common/file_io.h"
#include "base/common/status_macros.h"
#include "config/config_loader.h"
#include "datasets/text/shard_pairing.h"
#include "datasets/text/token_shards.h"
#include "models/model_loader.h"
#include "ops/backend/torch_init.h"
#include "pipelines/train/replacement_metrics.h"

ABSL_FLAG(std::string, base, "", "The language model (.pt)");
ABSL_FLAG(std::string, base_name, "base", "The model's name in the CSV");
ABSL_FLAG(std::string, tokens, "", "Held-out token split (manifest)");
ABSL_FLAG(int, batches, 16, "CE evaluation batches");
ABSL_FLAG(int, batch_size, 16, "Windows per CE batch");
ABSL_FLAG(std::string, out, "", "CSV path");

namespace sparse_layers::analysis {
namespace {

absl::Status Run() {
  RETURN_IF_ERROR(
      FirstError({RequiredFile(FLAGS_base), RequiredFile(FLAGS_tokens),
                  RequiredFlag(FLAGS_out), FlagAtLeast(FLAGS_batches, 1),
                  FlagAtLeast(FLAGS_batch_size, 1)}));
  RETURN_IF_ERROR(AcquireCpuSlotIfRequested(absl::GetFlag(FLAGS_threads)));
  ASSIGN_OR_RETURN(auto base, layers::LoadModel(absl::GetFlag(FLAGS_base)));
  ASSIGN_OR_RETURN(auto tokens,
                   datasets::TokenShardSet::Open(absl::GetFlag(FLAGS_tokens)));
  RETURN_IF_ERROR(datasets::CheckFitsModelVocabulary(
      *tokens, base.model->options().vocab_size, absl::GetFlag(FLAGS_base)));
  const int length = config::TrainingWindowLength(base.config);
  ASSIGN_OR_RETURN(auto sampler,
                   datasets::BatchSampler::Create(
                       tokens.get(), absl::GetFlag(FLAGS_batch_size), length,
                       base.config.runtime().seed()));
  const int batches = absl::GetFlag(FLAGS_batches);
  const auto cross_entropy = [&] {
    return train::MeanCrossEntropy(*base.model, sampler, batches);
  };
  const FfnAblation ablation = FfnAblationCosts(*base.model, cross_entropy);
  const double intact = ablation.intact_cross_entropy;
  const std::vector<double>& costs = ablation.costs;
  std::string csv = "base,block,ce_base,ce_zero,ablation_cost,seed\n";
  for (size_t block = 0; block < costs.size(); ++block) {
    absl::StrAppendFormat(&csv, "%s,%d,%.6f,%.6f,%.6f,%d\n",
                          absl::GetFlag(FLAGS_base_name), block, intact,
                          intact + costs[block], costs[block],
                          base.config.runtime().seed());
    std::fprintf(stderr,
                 "ffn_ablation: block %zu FFN zero-ablated: +%.4f nats\n",
                 block, costs[block]);
  }
  return WriteFileAtomically(absl::GetFlag(FLAGS_out), csv);
}

}  // namespace
}  // namespace sparse_layers::analysis

int main(int argc, char** argv) {
  sparse_layers::InitMain(argc, argv,
                          "Measures each block's FFN zero-ablation cost.");
  return sparse_layers::RunMain(sparse_layers::analysis::Run);
}
