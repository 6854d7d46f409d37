#include "analysis/expert_geometry/expert_encoders.h"

#include <algorithm>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/common/status_macros.h"
#include "layers/ffn/mixture_of_experts.h"

namespace sparse_layers::analysis {

absl::StatusOr<LabelledRows> ExpertEncoderRows(layers::GptImpl& model,
                                               int block, int rows_per_expert) {
  if (block < 0 || block >= static_cast<int>(model.blocks.size())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "block ", block, " is not in the model's ", model.blocks.size()));
  }
  const auto mixture = std::dynamic_pointer_cast<layers::MixtureOfExpertsImpl>(
      model.blocks[block]->ffn);
  if (mixture == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("block ", block, "'s FFN (", model.options().ffn,
                     ") is not a mixture of experts"));
  }
  torch::NoGradGuard no_grad;
  torch::Tensor encoders = mixture->encoders.detach();  // (M, D, d)
  if (rows_per_expert > 0 && rows_per_expert < encoders.size(1))
    encoders = encoders.slice(1, 0, rows_per_expert);
  const int64_t experts = encoders.size(0), rows = encoders.size(1);
  LabelledRows labelled;
  labelled.points =
      encoders.reshape({experts * rows, encoders.size(2)}).to(torch::kFloat64);
  labelled.experts =
      torch::arange(experts, torch::kLong).repeat_interleave(rows);
  return labelled;
}

double SameLabelNeighbourShare(const torch::Tensor& points,
                               const torch::Tensor& labels, int k) {
  const int64_t n = points.size(0);
  torch::Tensor distances =
      PairwiseSquaredDistances(points.to(torch::kFloat64));
  distances.fill_diagonal_(std::numeric_limits<double>::infinity());
  const torch::Tensor nearest =
      std::get<1>(distances.topk(std::min<int64_t>(k, n - 1), 1,
                                 /*largest=*/false));
  return labels.index_select(0, nearest.flatten())
      .view(nearest.sizes())
      .eq(labels.unsqueeze(1))
      .to(torch::kFloat64)
      .mean()
      .item<double>();
}

double ChanceNeighbourShare(const torch::Tensor& labels) {
  const torch::Tensor counts = torch::bincount(labels).to(torch::kFloat64);
  const double n = static_cast<double>(labels.numel());
  return (counts * (counts - 1)).sum().item<double>() / (n * (n - 1));
}

ExpertEncoderTables::ExpertEncoderTables()
    : neighbours_(
          "model,seed,layer,headline_block,experts,rows,neighbours,"
          "same_expert_share,chance_share,same_expert_excess\n"),
      map_("model,seed,layer,expert,row,tsne_x,tsne_y,kl_divergence\n") {}

absl::Status ExpertEncoderTables::AddModel(
    layers::GptImpl& model, const ExpertEncoderOptions& options) {
  int mixtures = 0;
  for (int block = 0; block < static_cast<int>(model.blocks.size()); ++block) {
    auto rows = ExpertEncoderRows(model, block, options.rows_per_expert);
    if (!rows.ok()) continue;  // A dense block: nothing to cluster.
    ++mixtures;
    const int64_t experts = rows->experts.max().item<int64_t>() + 1;
    const double share = SameLabelNeighbourShare(rows->points, rows->experts,
                                                 options.neighbours);
    const double chance = ChanceNeighbourShare(rows->experts);
    absl::StrAppendFormat(&neighbours_, "%s,%d,%d,%d,%d,%d,%d,%.6f,%.6f,%.6f\n",
                          options.model_name, options.seed, block,
                          block == options.headline_layer ? 1 : 0, experts,
                          rows->points.size(0), options.neighbours, share,
                          chance, share - chance);
    if (!options.map || block != options.headline_layer) continue;
    // Rows are expert-major: expert j's first `mapped` rows start at j * rows.
    const int64_t per_expert = rows->points.size(0) / experts;
    const int64_t mapped =
        options.map_rows_per_expert > 0
            ? std::min<int64_t>(options.map_rows_per_expert, per_expert)
            : per_expert;
    const torch::Tensor index =
        (torch::arange(experts, torch::kLong).unsqueeze(1) * per_expert +
         torch::arange(mapped, torch::kLong).unsqueeze(0))
            .flatten();
    ASSIGN_OR_RETURN(const TsneMap map,
                     Tsne(rows->points.index_select(0, index), options.tsne));
    const auto xy = map.embedding.accessor<double, 2>();
    for (int64_t i = 0; i < index.size(0); ++i) {
      absl::StrAppendFormat(&map_, "%s,%d,%d,%d,%d,%.5f,%.5f,%.6f\n",
                            options.model_name, options.seed, block, i / mapped,
                            i % mapped, xy[i][0], xy[i][1], map.kl_divergence);
    }
  }
  if (mixtures == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model ", options.model_name, " (FFN ", model.options().ffn,
        ") has no mixture-of-experts block: no expert encoders"));
  }
  return absl::OkStatus();
}

}  // namespace sparse_layers::analysis
