// The MoHD observation study (arXiv:2412.05644 Sec. 3, Figs. 3-5) on trained
// models: held-out windows run through each model, every block's residual,
// attention and FFN sites captured, and two tables written:
//   flow.csv:    per model, block and site: mean sum m (M3, also relative to
//                the block's attention input), median m, the share of the top
//                10 / 25 / 50% dims (M1), relative sparsity (M2);
//   sharing.csv: per model, block, q and window w at the attention input:
//                dims shared by w consecutive tokens, by w tokens of
//                different sequences (shuffled null) and by independent
//                sets (M4), and the in-all / unique counts of M5.
// Position 0 (the document start and attention sink) is left out.
#ifndef SPARSE_LAYERS_ANALYSIS_ACTIVATION_FLOW_ACTIVATION_FLOW_H_
#define SPARSE_LAYERS_ANALYSIS_ACTIVATION_FLOW_ACTIVATION_FLOW_H_

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "datasets/text/token_shards.h"
#include "models/gpt.h"

namespace sparse_layers::analysis {

struct ActivationFlowOptions {
  int windows = 256;          // Held-out windows (fewer if the split is short).
  int sequence_length = 128;  // Capped at each model's context.
  int64_t shuffled_windows = 2000;  // Random windows per shuffled null.
};

// (site, hook name suffix) in the order activations flow through a block.
const std::vector<std::pair<std::string, std::string>>& ActivationSites();

// Every block's activations at each of ActivationSites() for `tokens` (S, T),
// position 0 dropped: per block and site (S, T - 1, width).
absl::StatusOr<std::vector<std::vector<torch::Tensor>>> CaptureActivationSites(
    layers::GptImpl& model, const torch::Tensor& tokens);

// flow.csv and sharing.csv, filled one model at a time (a model is loaded,
// measured and released before the next).
class ActivationFlowTables {
 public:
  ActivationFlowTables();
  absl::Status AddModel(const std::string& name, layers::GptImpl& model,
                        const datasets::TokenShardSet& tokens,
                        const ActivationFlowOptions& options);
  const std::string& flow() const { return flow_; }
  const std::string& sharing() const { return sharing_; }

 private:
  std::string flow_, sharing_;
};

}  // namespace sparse_layers::analysis

#endif  // SPARSE_LAYERS_ANALYSIS_ACTIVATION_FLOW_ACTIVATION_FLOW_H_
