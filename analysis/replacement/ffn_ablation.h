// Zero-ablation cost of every block's FFN: what each FFN is worth to a
// language model (the MxD paper's zero-ablation baseline, arXiv:2505.21364
// Sec. 3.1, measured per block to choose a block whose FFN matters).
#ifndef SPARSE_LAYERS_ANALYSIS_REPLACEMENT_FFN_ABLATION_H_
#define SPARSE_LAYERS_ANALYSIS_REPLACEMENT_FFN_ABLATION_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "models/gpt.h"

namespace sparse_layers::analysis {

struct FfnAblation {
  double intact_cross_entropy = 0;
  // Per block: CE with that block's FFN output zeroed minus the intact CE.
  std::vector<double> costs;
};

// measure() with the output at hook point `hook` (e.g. "blocks.2.ffn.hook_out"
// or "blocks.0.attn.hook_out") replaced by zeros, the hook point's hooks
// cleared afterwards; InvalidArgument naming the hook when the model has none
// of that name (a block it does not have).
absl::StatusOr<double> ZeroAblated(layers::GptImpl& model,
                                   const std::string& hook,
                                   const std::function<double()>& measure);

// `cross_entropy()` of the intact model, then with each block's FFN output
// zeroed in turn. The model is left intact.
FfnAblation FfnAblationCosts(layers::GptImpl& model,
                             const std::function<double()>& cross_entropy);

}  // namespace sparse_layers::analysis

#endif  // SPARSE_LAYERS_ANALYSIS_REPLACEMENT_FFN_ABLATION_H_
