// Do a mixture's experts own distinct regions of input space? Each expert's
// encoder rows W_enc^(j) as points, labelled by expert: the share of each
// row's nearest rows that belong to its own expert (against the share chance
// gives), and a t-SNE map of the rows (MoE-X arXiv:2503.07639 Sec. 5.3, Fig. 6:
// MoE-X's rows cluster by expert, a standard MoE's do not).
#ifndef SPARSE_LAYERS_ANALYSIS_EXPERT_GEOMETRY_EXPERT_ENCODERS_H_
#define SPARSE_LAYERS_ANALYSIS_EXPERT_GEOMETRY_EXPERT_ENCODERS_H_

#include <torch/torch.h>

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "analysis/expert_geometry/tsne.h"
#include "models/gpt.h"

namespace sparse_layers::analysis {

// Rows of a set of experts: points (n, d) and each row's expert (n), int64.
struct LabelledRows {
  torch::Tensor points;
  torch::Tensor experts;
};

// The first `rows_per_expert` encoder rows of every expert of `block`'s FFN
// (all rows when it is 0); an error when that FFN is not a mixture of experts.
absl::StatusOr<LabelledRows> ExpertEncoderRows(layers::GptImpl& model,
                                               int block, int rows_per_expert);

// Mean over points of the share of their k nearest other points (Euclidean)
// that carry their own label.
double SameLabelNeighbourShare(const torch::Tensor& points,
                               const torch::Tensor& labels, int k);

// What SameLabelNeighbourShare gives when labels are unrelated to position:
// sum_g n_g (n_g - 1) / (n (n - 1)).
double ChanceNeighbourShare(const torch::Tensor& labels);

struct ExpertEncoderOptions {
  std::string model_name;  // The `model` column.
  int64_t seed = 0;        // The `seed` column: the model's runtime.seed.
  int rows_per_expert = 256;
  int neighbours = 10;
  int headline_layer = 0;  // The block the claims read; the map's block.
  bool map = false;        // Whether to draw its t-SNE map (the costly part).
  // Each expert's first rows the map draws: exact t-SNE costs O(n^2) per
  // iteration, minutes at 2,048 points on 2 cores, seconds at 512.
  int map_rows_per_expert = 64;
  TsneOptions tsne;
};

// Rows for every block whose FFN is a mixture (an error when none is),
// appended to two CSVs with headers: `neighbours` (model, seed, layer,
// headline_block, experts, rows, neighbours, same_expert_share, chance_share,
// same_expert_excess) and, with options.map, `map` (model, seed, layer,
// expert, row, tsne_x, tsne_y, kl_divergence) of the headline block's first
// map_rows_per_expert rows of each expert.
class ExpertEncoderTables {
 public:
  ExpertEncoderTables();
  absl::Status AddModel(layers::GptImpl& model,
                        const ExpertEncoderOptions& options);
  const std::string& neighbours() const { return neighbours_; }
  const std::string& map() const { return map_; }

 private:
  std::string neighbours_, map_;
};

}  // namespace sparse_layers::analysis

#endif  // SPARSE_LAYERS_ANALYSIS_EXPERT_GEOMETRY_EXPERT_ENCODERS_H_
