#include "analysis/steering/steering_metrics.h"

#include <algorithm>
#include <limits>
#include <map>
#include <utility>

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

std::vector<double> ContinuationNlls(
    layers::GptImpl& model, const std::vector<int64_t>& prompt,
    const std::vector<std::vector<int64_t>>& continuations) {
  torch::NoGradGuard no_grad;
  const int64_t context = model.options().context_length;
  const torch::Tensor unembedding = model.UnembeddingWeight();
  // Continuations of one length share a batch (and the same left cut).
  std::map<size_t, std::vector<size_t>> rows_by_length;
  for (size_t i = 0; i < continuations.size(); ++i) {
    rows_by_length[continuations[i].size()].push_back(i);
  }
  std::vector<double> nlls(continuations.size(),
                           std::numeric_limits<double>::quiet_NaN());
  for (const auto& [length, rows] : rows_by_length) {
    if (length == 0) continue;  // Nothing scored: NaN.
    std::vector<int64_t> ids;
    for (size_t row : rows) {
      std::vector<int64_t> sequence = prompt;
      sequence.insert(sequence.end(), continuations[row].begin(),
                      continuations[row].end());
      if (static_cast<int64_t>(sequence.size()) > context + 1) {
        sequence.erase(sequence.begin(), sequence.end() - (context + 1));
      }
      ids.insert(ids.end(), sequence.begin(), sequence.end());
    }
    const int64_t batch = rows.size();
    const torch::Tensor sequences =
        torch::tensor(ids, torch::kLong).view({batch, -1});
    const int64_t n = sequences.size(1);
    const int64_t scored = std::min<int64_t>(length, n - 1);
    // Only the scored positions are unembedded: (batch * scored, vocab).
    const torch::Tensor hidden =
        model.Hidden(sequences.slice(1, 0, n - 1)).slice(1, n - 1 - scored);
    const torch::Tensor logits = torch::nn::functional::linear(
        hidden.reshape({batch * scored, -1}), unembedding);
    const torch::Tensor losses =
        torch::nn::functional::cross_entropy(
            logits, sequences.slice(1, n - scored).reshape({-1}),
            torch::nn::functional::CrossEntropyFuncOptions().reduction(
                torch::kNone))
            .view({batch, scored})
            .mean(1);
    for (int64_t b = 0; b < batch; ++b) {
      nlls[rows[b]] = losses[b].item<double>();
    }
  }
  return nlls;
}

layers::HookFn AddToUnitHook(int64_t unit, double alpha) {
  return AddToRowUnitHook({unit}, {alpha});  // One row: every position.
}

layers::HookFn AddToRowUnitHook(std::vector<int64_t> units,
                                std::vector<double> alphas) {
  return [units = std::move(units),
          alphas = std::move(alphas)](const torch::Tensor& codes) {
    torch::Tensor steered = codes.clone(at::MemoryFormat::Contiguous);
    const int64_t rows = units.size();
    TORCH_CHECK(codes.dim() >= 2 && codes.size(0) % rows == 0,
                "row-wise steering of ", rows, " rows got codes ",
                codes.sizes());
    // (rows, positions, units): the code's rows are batch-major.
    const torch::Tensor by_row = steered.view({rows, -1, steered.size(-1)});
    for (int64_t r = 0; r < rows; ++r) {
      if (alphas[r] != 0) by_row[r].select(-1, units[r]).add_(alphas[r]);
    }
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
