// Automatic steering scores (MxD Fig. 5 used LLM judges, which we do not have
// offline; seed-mxd.md 5.10 and 7.3): concept strength from a unit's
// top-activating tokens, fluency as the unsteered base model's NLL.
#ifndef SPARSE_LAYERS_ANALYSIS_STEERING_STEERING_METRICS_H_
#define SPARSE_LAYERS_ANALYSIS_STEERING_STEERING_METRICS_H_

#include <torch/torch.h>

#include <cstdint>
#include <set>
#include <vector>

#include "layers/models/gpt.h"

namespace sparse_layers::analysis {

// The `count` distinct token ids whose positions activate the unit most
// (ranked by each id's largest activation; ids with activation <= 0 are
// never included). activations, tokens: (N,).
std::set<int64_t> TopActivatingTokens(const torch::Tensor& activations,
                                      const torch::Tensor& tokens,
                                      int64_t count);

// Share of the generated tokens that are in `concept_tokens`.
double ConceptShare(const std::vector<std::vector<int64_t>>& generations,
                    const std::set<int64_t>& concept_tokens);

// Mean negative log-likelihood (nats per token) the model assigns to
// `continuation` after `prompt` (teacher forcing, one forward pass).
double ContinuationNll(layers::GptImpl& model,
                       const std::vector<int64_t>& prompt,
                       const std::vector<int64_t>& continuation);

}  // namespace sparse_layers::analysis

#endif  // SPARSE_LAYERS_ANALYSIS_STEERING_STEERING_METRICS_H_
