#include "analysis/steering/steering_metrics.h"

#include <algorithm>
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

}  // namespace sparse_layers::analysis
