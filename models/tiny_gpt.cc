#include "models/tiny_gpt.h"

namespace sparse_layers::layers::testing {

GptOptions TinyGptOptions(int64_t vocab_size, int64_t d_model,
                          int64_t n_layers) {
  GptOptions options;
  options.vocab_size = vocab_size;
  options.context_length = 16;
  options.d_model = d_model;
  options.n_layers = n_layers;
  options.n_heads = 2;
  options.d_ffn = 2 * d_model;
  return options;
}

config::ModelConfig TinyModelConfig(int64_t vocab_size, int64_t d_model,
                                    int64_t n_layers) {
  config::ModelConfig model;
  model.set_vocab_size(vocab_size);
  model.set_context_length(16);
  model.set_d_model(d_model);
  model.set_n_layers(n_layers);
  model.set_n_heads(2);
  model.set_d_ffn(2 * d_model);
  return model;
}

}  // namespace sparse_layers::layers::testing
