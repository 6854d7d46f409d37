#include "analysis/replacement/ffn_ablation.h"

#include <torch/torch.h>

#include "absl/strings/str_cat.h"
#include "layers/hooks/hook_point.h"

namespace sparse_layers::analysis {

FfnAblation FfnAblationCosts(layers::GptImpl& model,
                             const std::function<double()>& cross_entropy) {
  FfnAblation ablation;
  ablation.intact_cross_entropy = cross_entropy();
  for (int block = 0; block < static_cast<int>(model.blocks.size()); ++block) {
    layers::HookPoint* ffn_out =
        model.FindHook(absl::StrCat("blocks.", block, ".ffn.hook_out"));
    ffn_out->Add(layers::ZeroAblationHook());
    ablation.costs.push_back(cross_entropy() - ablation.intact_cross_entropy);
    ffn_out->Clear();
  }
  return ablation;
}

}  // namespace sparse_layers::analysis
