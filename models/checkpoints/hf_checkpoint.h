// Pretrained Hugging Face checkpoints (a directory with config.json and
// model.safetensors) loaded onto the hookable GPT: GPT-2, GPT-NeoX (Pythia) and
// Llama, each as GptOptions of the one model, so every hook point works on
// them as on the models trained here.
#ifndef SPARSE_LAYERS_MODELS_CHECKPOINTS_HF_CHECKPOINT_H_
#define SPARSE_LAYERS_MODELS_CHECKPOINTS_HF_CHECKPOINT_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "models/gpt.h"

namespace sparse_layers::layers {

// The model types config.json may name.
inline constexpr char kSupportedHuggingFaceTypes[] = "gpt2, gpt_neox, llama";

struct HuggingFaceModel {
  std::string model_type;          // config.json's model_type.
  std::shared_ptr<GptImpl> model;  // In eval mode.
};

// The GptOptions of a config.json. The context length is capped at
// max_context_length (the causal mask is context_length^2 floats per layer);
// positions past the cap are then out of reach, nothing else changes.
absl::StatusOr<GptOptions> HuggingFaceOptions(const std::string& config_path,
                                              int64_t max_context_length);

// Reads <dir>/config.json, builds the model and copies every tensor of
// <dir>/model.safetensors (F32, F16 or BF16) into it, or of the shards that
// <dir>/model.safetensors.index.json maps names to, with or without the
// architecture's name prefix ("transformer.", "gpt_neox.", "model."). Every
// error is one line naming the file: an unsupported model_type (with the
// supported ones), a missing or bad config field, a missing, unexpected or
// wrongly shaped tensor, an unsupported dtype, a malformed file.
absl::StatusOr<HuggingFaceModel> LoadHuggingFaceModel(
    const std::string& dir, int64_t max_context_length = 4096);

}  // namespace sparse_layers::layers

#endif  // SPARSE_LAYERS_MODELS_CHECKPOINTS_HF_CHECKPOINT_H_
