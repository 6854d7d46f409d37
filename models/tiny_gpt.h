// Test helper: the options of the tiny random GPTs the tests build (context
// 16, 2 heads, the default GELU FFN of width 2 d_model); a test sets what it
// varies on top, so the model's size stays in one place.
#ifndef SPARSE_LAYERS_MODELS_TINY_GPT_H_
#define SPARSE_LAYERS_MODELS_TINY_GPT_H_

#include <cstdint>

#include "config/experiment.pb.h"
#include "models/gpt.h"

namespace sparse_layers::layers::testing {

GptOptions TinyGptOptions(int64_t vocab_size, int64_t d_model,
                          int64_t n_layers);

// The same model as a config's model section (GptOptionsFromConfig).
config::ModelConfig TinyModelConfig(int64_t vocab_size, int64_t d_model,
                                    int64_t n_layers);

}  // namespace sparse_layers::layers::testing

#endif  // SPARSE_LAYERS_MODELS_TINY_GPT_H_
