// Automatic steering scores (MxD Fig. 5 used LLM judges, which we do not have
// offline; arXiv:2505.21364 Sec. 3.2.2, App. D.1): concept strength from a
// unit's top-activating tokens, fluency as the unsteered base model's NLL.
#ifndef SPARSE_LAYERS_ANALYSIS_STEERING_STEERING_METRICS_H_
#define SPARSE_LAYERS_ANALYSIS_STEERING_STEERING_METRICS_H_

#include <torch/torch.h>

#include <cstdint>
#include <set>
#include <vector>

#include "models/gpt.h"
#include "ops/hooks/hook_point.h"

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

// Mean negative log-likelihood (nats per token) the model assigns to each
// continuation after `prompt` (teacher forcing; continuations of one length
// share a forward pass); NaN for an empty continuation.
std::vector<double> ContinuationNlls(
    layers::GptImpl& model, const std::vector<int64_t>& prompt,
    const std::vector<std::vector<int64_t>>& continuations);

// Adds alpha to column `unit` of a code tensor (..., units): steering one unit
// of a layer's code at every position (MxD Sec. 3.2.2).
layers::HookFn AddToUnitHook(int64_t unit, double alpha);

// Row-wise steering of a batch decoded together (SampleRows): row r's codes
// get alphas[r] added to column units[r]; a zero alpha leaves the row as it
// was. codes: (rows, T, units) or (rows * T, units).
layers::HookFn AddToRowUnitHook(std::vector<int64_t> units,
                                std::vector<double> alphas);

// Held-out windows for choosing alpha: inputs and next-token targets (B, T),
// and the unsteered model's log-probabilities over them (B, T, V).
struct HeldOutText {
  torch::Tensor inputs;
  torch::Tensor targets;
  torch::Tensor unsteered_log_probs;
};
HeldOutText MakeHeldOutText(layers::GptImpl& model, torch::Tensor inputs,
                            torch::Tensor targets);

// What steering one unit does to the model's predictions on held-out text
// (teacher forcing, no sampling noise).
struct HeldOutEffect {
  // Probability mass on the unit's concept tokens, steered minus unsteered,
  // averaged over positions.
  double concept_mass_gain = 0;
  // Next-token cross-entropy, steered minus unsteered (nats per token).
  double ce_increase = 0;
};
HeldOutEffect HeldOutSteeringEffect(layers::GptImpl& model,
                                    layers::HookPoint& codes_hook, int64_t unit,
                                    double alpha, const HeldOutText& text,
                                    const std::set<int64_t>& concept_tokens);

// One alpha scale of the sweep, averaged over the calibration units.
struct SweepPoint {
  double alpha_scale = 0;
  HeldOutEffect effect;
};

// The scale with the largest held-out concept gain among those that cost at
// most `max_ce_increase` nats; the smallest scale when none is that cheap.
// The paper fixes alpha for LLM-scale codes (MxD Sec. D.1); choosing it per
// layer at a matched fluency cost keeps the layers' comparison fair.
double ChooseAlphaScale(const std::vector<SweepPoint>& sweep,
                        double max_ce_increase);

}  // namespace sparse_layers::analysis

#endif  // SPARSE_LAYERS_ANALYSIS_STEERING_STEERING_METRICS_H_
