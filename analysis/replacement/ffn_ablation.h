// Zero-ablation cost of every block's FFN: what each FFN is worth to a
// language model (the MxD paper's zero-ablation baseline, arXiv:2505.21364
// Sec. 3.1, measured per block to choose a block whose FFN matters).
#ifndef SPARSE_LAYERS_ANALYSIS_REPLACEMENT_FFN_ABLATION_H_
#define SPARSE_LAYERS_ANALYSIS_REPLACEMENT_FFN_ABLATION_H_

#include <functional>
#include <vector>

#include "layers/models/gpt.h"

namespace sparse_layers::analysis {

// For every block in turn: `cross_entropy()` of the model with that block's
// FFN output zeroed, minus the intact model's. The model is left intact.
std::vector<double> FfnAblationCosts(
    layers::GptImpl& model, const std::function<double()>& cross_entropy);

}  // namespace sparse_layers::analysis

#endif  // SPARSE_LAYERS_ANALYSIS_REPLACEMENT_FFN_ABLATION_H_
