// Exact t-SNE (van der Maaten and Hinton 2008): a 2-D map of points that keeps
// each point's near neighbours near, for MoE-X's map of expert encoder rows
// (arXiv:2503.07639 Fig. 6). O(n^2) memory and time: for a few thousand points.
#ifndef SPARSE_LAYERS_ANALYSIS_EXPERT_GEOMETRY_TSNE_H_
#define SPARSE_LAYERS_ANALYSIS_EXPERT_GEOMETRY_TSNE_H_

#include <torch/torch.h>

#include <cstdint>

#include "absl/status/statusor.h"

namespace sparse_layers::analysis {

struct TsneOptions {
  double perplexity = 30.0;
  int iterations = 1000;
  // The paper's settings of the method: P scaled by 12 and momentum 0.5 for
  // the first 250 steps, then momentum 0.8 (van der Maaten 2014, Sec. 5).
  double early_exaggeration = 12.0;
  int exaggeration_iterations = 250;
  // <= 0: max(n / early_exaggeration / 4, 50), the usual automatic rate.
  double learning_rate = 0.0;
  uint64_t seed = 1;  // The N(0, 1e-4) start.
};

struct TsneMap {
  torch::Tensor embedding;   // (n, 2), float64.
  double kl_divergence = 0;  // KL(P || Q) of the final map.
};

// |x_i - x_j|^2 of the rows of x (n, d), as an (n, n) matrix (rounding below
// zero clamped to zero).
torch::Tensor PairwiseSquaredDistances(const torch::Tensor& x);

// The conditional affinities p_{j|i} (n, n), float64, each row a Gaussian
// kernel over `squared_distances` whose bandwidth gives the row entropy
// log(perplexity) (binary search), with p_{i|i} = 0.
torch::Tensor ConditionalAffinities(const torch::Tensor& squared_distances,
                                    double perplexity);

// The map of `points` (n, d); an error for fewer than 3 points, a perplexity
// not below n - 1, or non-finite coordinates.
absl::StatusOr<TsneMap> Tsne(const torch::Tensor& points,
                             const TsneOptions& options);

}  // namespace sparse_layers::analysis

#endif  // SPARSE_LAYERS_ANALYSIS_EXPERT_GEOMETRY_TSNE_H_
