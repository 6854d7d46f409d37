// Neuron usage and co-activation of product-key FFNs (sgatlin arXiv:2606.07414
// App. C.1, Fig. 8): which of a channel's n^2 neurons a token's top-k selects,
// over held-out sequences. Per block, averaged over channels: the share of
// neurons selected at least once (Fig. 8 centre), the Gini coefficient of
// their selection counts (Fig. 8 right; also counting each sequence's unique
// tokens once, the paper's control for skewed token frequencies), and the
// co-activation probability P(j | i) = co(i, j) / count(i) averaged over
// neuron pairs that share the first sub-key, the second, or neither
// (neuron i = i1 n + i2; Fig. 8 left's blocks and stripes).
#ifndef SPARSE_LAYERS_ANALYSIS_NEURON_USAGE_NEURON_USAGE_H_
#define SPARSE_LAYERS_ANALYSIS_NEURON_USAGE_NEURON_USAGE_H_

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "datasets/text/token_shards.h"
#include "models/gpt.h"

namespace sparse_layers::analysis {

// Sum_i Sum_j |x_i - x_j| / (2 n^2 mean(x)): 0 for equal counts, (n - 1) / n
// when one neuron takes every selection; 0 when all counts are 0.
double Gini(const std::vector<int64_t>& counts);

struct BlockUsage {
  int64_t neurons = 0;  // n^2 per channel.
  double used_fraction = 0;
  double gini = 0;
  double gini_unique_tokens = 0;
  double coactivation_same_first = 0;
  double coactivation_same_second = 0;
  double coactivation_other = 0;
};

// One block's statistics from its routing: `indices` (S * T, C, k), the
// neurons each token selects per channel in [0, n^2), for `tokens` (S, T).
absl::StatusOr<BlockUsage> UsageOfBlock(const torch::Tensor& indices,
                                        const torch::Tensor& tokens, int64_t n);

// P(j | i) for the first `m` neurons of channel 0 (row i, column j; 0 on the
// diagonal and for a neuron never selected): Fig. 8 left's map.
torch::Tensor CoactivationMap(const torch::Tensor& indices, int64_t m);

struct NeuronUsageOptions {
  int sequences = 128;        // Held-out windows (fewer if the split is short).
  int sequence_length = 128;  // Capped at the model's context.
  int map_neurons = 64;       // The map's first neurons (two sub-key blocks).
};

// usage.csv (seed,model,block,neurons,used_fraction,gini,gini_unique_tokens,
// coactivation_same_first,coactivation_same_second,coactivation_other, and
// coactivation_excess_{first,second}: a shared sub-key's P minus no shared
// sub-key's) and
// coactivation.csv (seed,model,block,neuron,other_neuron,probability: the
// penultimate block's map), one model at a time.
class NeuronUsageTables {
 public:
  NeuronUsageTables();
  // `model`'s FFNs must be product-key layers (sgatlin, PEER): their
  // hook_router_indices is captured at every block.
  absl::Status AddModel(const std::string& name, int64_t seed,
                        layers::GptImpl& model,
                        const datasets::TokenShardSet& tokens,
                        const NeuronUsageOptions& options);
  const std::string& usage() const { return usage_; }
  const std::string& coactivation() const { return coactivation_; }

 private:
  std::string usage_;
  std::string coactivation_;
};

}  // namespace sparse_layers::analysis

#endif  // SPARSE_LAYERS_ANALYSIS_NEURON_USAGE_NEURON_USAGE_H_
