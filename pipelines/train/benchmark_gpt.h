// The GPT the throughput benchmarks train (the sizes
// pytorch_eager_throughput.py builds too): V=8192, T=256, GELU MLP of 4d,
// 32-wide heads.
#ifndef SPARSE_LAYERS_PIPELINES_TRAIN_BENCHMARK_GPT_H_
#define SPARSE_LAYERS_PIPELINES_TRAIN_BENCHMARK_GPT_H_

#include <cstdint>

#include "models/gpt.h"

namespace sparse_layers::train {

inline layers::GptOptions BenchmarkGptOptions(int64_t d_model,
                                              int64_t n_layers) {
  layers::GptOptions options;
  options.vocab_size = 8192;
  options.context_length = 256;
  options.d_model = d_model;
  options.n_layers = n_layers;
  options.n_heads = d_model / 32;
  options.ffn = "gelu_mlp";
  options.d_ffn = 4 * d_model;
  return options;
}

}  // namespace sparse_layers::train

#endif  // SPARSE_LAYERS_PIPELINES_TRAIN_BENCHMARK_GPT_H_
