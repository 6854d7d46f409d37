#include "models/sampling.h"

#include <algorithm>

namespace sparse_layers::layers {

torch::Tensor NucleusProbabilities(const torch::Tensor& logits,
                                   double temperature, double top_p) {
  const torch::Tensor flat = logits.to(torch::kDouble).reshape({-1});
  if (temperature <= 0) {
    return torch::one_hot(flat.argmax(), flat.size(0)).to(torch::kDouble);
  }
  torch::Tensor probabilities = torch::softmax(flat / temperature, 0);
  if (top_p <= 0 || top_p >= 1) return probabilities;
  const auto [sorted, order] = probabilities.sort(0, /*descending=*/true);
  // Keep token i if the mass strictly before it is below top_p.
  const torch::Tensor before = sorted.cumsum(0) - sorted;
  const torch::Tensor keep_sorted = before < top_p;
  torch::Tensor keep = torch::zeros_like(keep_sorted);
  keep.index_put_({order}, keep_sorted);
  probabilities = probabilities * keep.to(torch::kDouble);
  return probabilities / probabilities.sum();
}

std::vector<int64_t> Sample(GptImpl& model, const std::vector<int64_t>& prompt,
                            const SamplingOptions& options) {
  torch::NoGradGuard no_grad;
  const bool was_training = model.is_training();
  model.eval();
  auto generator = at::make_generator<at::CPUGeneratorImpl>(options.seed);
  std::vector<int64_t> sequence = prompt;
  std::vector<int64_t> generated;
  const int64_t context = model.options().context_length;
  for (int i = 0; i < options.new_tokens; ++i) {
    const int64_t start =
        std::max<int64_t>(0, static_cast<int64_t>(sequence.size()) - context);
    const torch::Tensor tokens =
        torch::tensor(
            std::vector<int64_t>(sequence.begin() + start, sequence.end()),
            torch::kLong)
            .unsqueeze(0);
    torch::Tensor logits = model.forward(tokens)[0][-1];
    if (options.frequency_penalty != 0) {
      const torch::Tensor counts =
          torch::bincount(torch::tensor(sequence, torch::kLong), {},
                          logits.size(0))
              .to(logits.dtype());
      logits = logits - options.frequency_penalty * counts;
    }
    const torch::Tensor probabilities =
        NucleusProbabilities(logits, options.temperature, options.top_p);
    const int64_t next =
        torch::multinomial(probabilities, 1, false, generator).item<int64_t>();
    sequence.push_back(next);
    generated.push_back(next);
    if (next == options.stop_id) break;
  }
  model.train(was_training);
  return generated;
}

}  // namespace sparse_layers::layers
