#include "analysis/steering/steering_metrics.h"

#include <algorithm>
#include <limits>
#include <map>

namespace sparse_layers::analysis {

std::set<int64_t> TopActivatingTokens(const torch::Tensor& activations,
                                      const torch::Tensor& tokens,
                                      int64_t count) {
  const torch::Tensor a = activations.to(torch::kDouble).contiguous();
  const torch::Tensor t = tokens.to(torch::kLong).contiguous();
  std::map<int64_t, double> best;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double value = a.data_ptr<double>()[i];
    if (value <= 0) continue;
    double& slot = best[t.data_ptr<int64_t>()[i]];
    slot = std::max(slot, value);
  }
  std::vector<std::pair<double, int64_t>> ranked;
  for (const auto& [id, value] : best) ranked.push_back({-value, id});
  std::sort(ranked.begin(), ranked.end());
  std::set<int64_t> top;
  for (const auto& [negative, id] : ranked) {
    if (static_cast<int64_t>(top.size()) == count) break;
    top.insert(id);
  }
  return top;
}

double ConceptShare(const std::vector<std::vector<int64_t>>& generations,
                    const std::set<int64_t>& concept_tokens) {
  int64_t total = 0, hits = 0;
  for (const auto& generation : generations) {
    for (int64_t id : generation) {
      ++total;
      hits += concept_tokens.count(id);
    }
  }
  return total > 0 ? static_cast<double>(hits) / total : 0.0;
}

double ContinuationNll(layers::GptImpl& model,
                       const std::vector<int64_t>& prompt,
                       const std::vector<int64_t>& continuation) {
  torch::NoGradGuard no_grad;
  std::vector<int64_t> sequence = prompt;
  sequence.insert(sequence.end(), continuation.begin(), continuation.end());
  const int64_t context = model.options().context_length;
  if (static_cast<int64_t>(sequence.size()) > context + 1) {
    sequence.erase(sequence.begin(), sequence.end() - (context + 1));
  }
  const int64_t n = sequence.size();
  const torch::Tensor ids = torch::tensor(sequence, torch::kLong);
  const torch::Tensor logits =
      model.forward(ids.slice(0, 0, n - 1).unsqueeze(0))[0];
  const torch::Tensor losses = torch::nn::functional::cross_entropy(
      logits, ids.slice(0, 1, n),
      torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kNone));
  const int64_t scored = std::min<int64_t>(continuation.size(), n - 1);
  return losses.slice(0, n - 1 - scored).mean().item<double>();
}

layers::HookFn AddToUnitHook(int64_t unit, double alpha) {
  return [unit, alpha](const torch::Tensor& codes) {
    torch::Tensor steered = codes.clone();
    steered.select(-1, unit).add_(alpha);
    return steered;
  };
}

HeldOutText MakeHeldOutText(layers::GptImpl& model, torch::Tensor inputs,
                            torch::Tensor targets) {
  torch::NoGradGuard no_grad;
  HeldOutText text;
  text.unsteered_log_probs = torch::log_softmax(model.forward(inputs), -1);
  text.inputs = std::move(inputs);
  text.targets = std::move(targets);
  return text;
}

namespace {

// Mean over positions of the probability mass on `ids`, and the mean CE.
std::pair<double, double> MassAndCe(const torch::Tensor& log_probs,
                                    const torch::Tensor& targets,
                                    const torch::Tensor& ids) {
  const double mass =
      ids.numel() == 0
          ? 0.0
          : log_probs.index_select(-1, ids).exp().sum(-1).mean().item<double>();
  const double ce =
      -log_probs.gather(-1, targets.unsqueeze(-1)).mean().item<double>();
  return {mass, ce};
}

}  // namespace

HeldOutEffect HeldOutSteeringEffect(layers::GptImpl& model,
                                    layers::HookPoint& codes_hook, int64_t unit,
                                    double alpha, const HeldOutText& text,
                                    const std::set<int64_t>& concept_tokens) {
  torch::NoGradGuard no_grad;
  const torch::Tensor ids = torch::tensor(
      std::vector<int64_t>(concept_tokens.begin(), concept_tokens.end()),
      torch::kLong);
  codes_hook.Add(AddToUnitHook(unit, alpha));
  const torch::Tensor steered =
      torch::log_softmax(model.forward(text.inputs), -1);
  codes_hook.Clear();
  const auto [mass_steered, ce_steered] = MassAndCe(steered, text.targets, ids);
  const auto [mass_unsteered, ce_unsteered] =
      MassAndCe(text.unsteered_log_probs, text.targets, ids);
  return {mass_steered - mass_unsteered, ce_steered - ce_unsteered};
}

double ChooseAlphaScale(const std::vector<SweepPoint>& sweep,
                        double max_ce_increase) {
  double chosen = std::numeric_limits<double>::infinity();
  double best_gain = -std::numeric_limits<double>::infinity();
  bool any_within = false;
  for (const SweepPoint& point : sweep) {
    if (point.effect.ce_increase > max_ce_increase) continue;
    if (!any_within || point.effect.concept_mass_gain > best_gain) {
      best_gain = point.effect.concept_mass_gain;
      chosen = point.alpha_scale;
      any_within = true;
    }
  }
  if (any_within) return chosen;
  for (const SweepPoint& point : sweep) {
    chosen = std::min(chosen, point.alpha_scale);
  }
  return chosen;
}

}  // namespace sparse_layers::analysis
