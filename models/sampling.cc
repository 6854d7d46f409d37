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

std::vector<std::vector<int64_t>> SampleRows(
    GptImpl& model, const std::vector<int64_t>& prompt,
    const SamplingOptions& options, const std::vector<uint64_t>& seeds) {
  TORCH_CHECK(!prompt.empty(), "sampling needs a non-empty prompt");
  torch::NoGradGuard no_grad;
  const bool was_training = model.is_training();
  model.eval();
  const int64_t rows = seeds.size();
  std::vector<at::Generator> generators;
  for (uint64_t seed : seeds) {
    generators.push_back(at::make_generator<at::CPUGeneratorImpl>(seed));
  }
  // (rows, length): the prompt in every row, then each row's own samples.
  torch::Tensor sequences =
      torch::tensor(prompt, torch::kLong).unsqueeze(0).repeat({rows, 1});
  const torch::Tensor unembedding = model.UnembeddingWeight();
  const int64_t vocabulary = unembedding.size(0);
  // Each row's occurrence counts so far, prompt included (frequency penalty).
  torch::Tensor counts =
      torch::bincount(torch::tensor(prompt, torch::kLong), {}, vocabulary)
          .to(torch::kFloat)
          .unsqueeze(0)
          .repeat({rows, 1});
  std::vector<std::vector<int64_t>> generated(rows);
  std::vector<bool> stopped(rows, false);
  int64_t running = rows;
  const int64_t context = model.options().context_length;
  for (int i = 0; i < options.new_tokens && running > 0; ++i) {
    const int64_t length = sequences.size(1);
    const torch::Tensor window =
        sequences.slice(1, std::max<int64_t>(0, length - context));
    // Only the last position's logits are drawn from: (rows, vocabulary).
    torch::Tensor logits = torch::nn::functional::linear(
        model.Hidden(window).select(1, -1), unembedding);
    if (options.frequency_penalty != 0) {
      logits = logits - options.frequency_penalty * counts.to(logits.dtype());
    }
    std::vector<int64_t> next(rows, options.stop_id);
    for (int64_t r = 0; r < rows; ++r) {
      if (stopped[r]) continue;  // Fed its stop id; its tail is discarded.
      const torch::Tensor probabilities =
          NucleusProbabilities(logits[r], options.temperature, options.top_p);
      next[r] = torch::multinomial(probabilities, 1, false, generators[r])
                    .item<int64_t>();
      generated[r].push_back(next[r]);
      if (next[r] == options.stop_id) {
        stopped[r] = true;
        --running;
      }
    }
    const torch::Tensor column = torch::tensor(next, torch::kLong);
    sequences = torch::cat({sequences, column.unsqueeze(1)}, 1);
    counts.scatter_add_(1, column.clamp_min(0).unsqueeze(1),
                        torch::ones({rows, 1}, counts.options()));
  }
  model.train(was_training);
  return generated;
}

std::vector<int64_t> Sample(GptImpl& model, const std::vector<int64_t>& prompt,
                            const SamplingOptions& options) {
  return SampleRows(model, prompt, options, {options.seed}).front();
}

}  // namespace sparse_layers::layers
