#include "analysis/replacement/ffn_ablation.h"

#include <torch/torch.h>

namespace sparse_layers::analysis {

FfnAblation FfnAblationCosts(layers::GptImpl& model,
                             const std::function<double()>& cross_entropy) {
  FfnAblation ablation;
  ablation.intact_cross_entropy = cross_entropy();
  for (int block = 0; block < static_cast<int>(model.blocks.size()); ++block) {
    model.ReplaceFfn(
        block, [](const torch::Tensor& x) { return torch::zeros_like(x); });
    ablation.costs.push_back(cross_entropy() - ablation.intact_cross_entropy);
    model.ReplaceFfn(block, nullptr);
  }
  return ablation;
}

}  // namespace sparse_layers::analysis
