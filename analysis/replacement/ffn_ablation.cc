#include "analysis/replacement/ffn_ablation.h"

#include <torch/torch.h>

namespace sparse_layers::analysis {

std::vector<double> FfnAblationCosts(
    layers::GptImpl& model, const std::function<double()>& cross_entropy) {
  const double intact = cross_entropy();
  std::vector<double> costs;
  for (int block = 0; block < static_cast<int>(model.blocks.size()); ++block) {
    model.ReplaceFfn(
        block, [](const torch::Tensor& x) { return torch::zeros_like(x); });
    costs.push_back(cross_entropy() - intact);
    model.ReplaceFfn(block, nullptr);
  }
  return costs;
}

}  // namespace sparse_layers::analysis
