// A tiny random GPT-2 checkpoint in the Hugging Face layout, for tests of what
// reads one (hf_checkpoint_test, pipelines/pretrained).
#ifndef SPARSE_LAYERS_MODELS_CHECKPOINTS_HF_TEST_CHECKPOINT_H_
#define SPARSE_LAYERS_MODELS_CHECKPOINTS_HF_TEST_CHECKPOINT_H_

#include <torch/torch.h>

#include <map>
#include <string>

#include "absl/status/status.h"

namespace sparse_layers::layers {

// config.json of a GPT-2 with vocabulary 11, context 8, d 8, 2 layers, 2
// heads, tanh GELU.
inline constexpr char kTinyGpt2Config[] =
    R"({"model_type": "gpt2", "vocab_size": 11,
  "n_positions": 8, "n_embd": 8, "n_layer": 2, "n_head": 2, "n_inner": null,
  "activation_function": "gelu_new", "layer_norm_epsilon": 1e-05})";

// Its tensors as transformers' GPT2LMHeadModel names them (Conv1D weights
// [in, out]), drawn after torch::manual_seed(0); `vocab_size` rows of wte.
std::map<std::string, torch::Tensor> TinyGpt2Tensors(int64_t vocab_size = 11);

// Writes `config` as <dir>/config.json and `tensors` as
// <dir>/model.safetensors.
absl::Status WriteHuggingFaceCheckpoint(
    const std::string& dir, const std::string& config,
    const std::map<std::string, torch::Tensor>& tensors);

// A one-layer nanoGPT checkpoint (ckpt.pt's dictionary; torch::pickle_save
// writes torch.save's zip format), piece by piece for tests that break one.
namespace tiny_nanogpt {

using Dict = c10::impl::GenericDict;
inline constexpr int64_t kVocab = 8, kWidth = 8, kContext = 4;

Dict NewDict();
// Its state dict (random values; lm_head tied to wte), names with `prefix`.
Dict StateDict(bool bias, const std::string& prefix = "");
Dict ModelArgs(bool bias);
// {model, model_args, iter_num, best_val_loss}.
Dict Checkpoint(Dict state, Dict args);

}  // namespace tiny_nanogpt

}  // namespace sparse_layers::layers

#endif  // SPARSE_LAYERS_MODELS_CHECKPOINTS_HF_TEST_CHECKPOINT_H_
