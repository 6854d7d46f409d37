// Autoregressive sampling from a GPT with temperature and nucleus (top-p,
// Holtzman et al. 2020) truncation.
#ifndef SPARSE_LAYERS_MODELS_SAMPLING_H_
#define SPARSE_LAYERS_MODELS_SAMPLING_H_

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "models/gpt.h"

namespace sparse_layers::layers {

struct SamplingOptions {
  int new_tokens = 32;
  // 0 picks the most likely token.
  double temperature = 1.0;
  // Keep the smallest set of tokens whose probability reaches top_p; >= 1 keeps
  // all.
  double top_p = 1.0;
  uint64_t seed = 0;
  // Subtracted from a token's logit once per occurrence in the sequence so far
  // (prompt included), as TransformerLens's freq_penalty (MxD steering: 1.0).
  double frequency_penalty = 0.0;
  // Stop after this id (e.g. end of text); -1 never stops early.
  int stop_id = -1;
};

// The distribution sampling draws from: softmax(logits / T) restricted to
// the nucleus and renormalised. logits: (V,).
torch::Tensor NucleusProbabilities(const torch::Tensor& logits,
                                   double temperature, double top_p);

// Continues `prompt` (ids) once per seed, the rows decoded as one batch (one
// forward per new token, only the last position unembedded); row r draws from
// its own generator seeded seeds[r], so it equals a one-row run with that
// seed. Returns only the new ids, without what follows a row's stop id. The
// context window slides when the sequence outgrows it. options.seed is unused.
std::vector<std::vector<int64_t>> SampleRows(
    GptImpl& model, const std::vector<int64_t>& prompt,
    const SamplingOptions& options, const std::vector<uint64_t>& seeds);

// One row of SampleRows, seeded options.seed.
std::vector<int64_t> Sample(GptImpl& model, const std::vector<int64_t>& prompt,
                            const SamplingOptions& options);

}  // namespace sparse_layers::layers

#endif  // SPARSE_LAYERS_MODELS_SAMPLING_H_
