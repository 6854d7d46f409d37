#include "analysis/replacement/ffn_ablation.h"

#include <torch/torch.h>

#include "absl/strings/str_cat.h"
#include "base/common/status_macros.h"
#include "models/hook_lookup.h"
#include "ops/hooks/hook_point.h"

namespace sparse_layers::analysis {

absl::StatusOr<double> ZeroAblated(layers::GptImpl& model,
                                   const std::string& hook,
                                   const std::function<double()>& measure) {
  ASSIGN_OR_RETURN(layers::HookPoint* const point,
                   layers::RequireHook(model, hook));
  point->Add(layers::ZeroAblationHook());
  const double value = measure();
  point->Clear();
  return value;
}

FfnAblation FfnAblationCosts(layers::GptImpl& model,
                             const std::function<double()>& cross_entropy) {
  FfnAblation ablation;
  ablation.intact_cross_entropy = cross_entropy();
  for (int block = 0; block < static_cast<int>(model.blocks.size()); ++block) {
    // Every block has its hook point, so value() cannot throw here.
    const double ablated =
        ZeroAblated(model, absl::StrCat("blocks.", block, ".ffn.hook_out"),
                    cross_entropy)
            .value();
    ablation.costs.push_back(ablated - ablation.intact_cross_entropy);
  }
  return ablation;
}

}  // namespace sparse_layers::analysis
