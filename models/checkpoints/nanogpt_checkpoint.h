// nanoGPT checkpoints (Karpathy's nanoGPT train.py: ckpt.pt, a torch.save zip
// of {model, optimizer, model_args, iter_num, best_val_loss, config}), such as
// Karvonen's chess models (chess_llm_interpretability), loaded onto the
// hookable GPT: GPT-2 with nn.Linear weights, learned positions, LayerNorms
// and Linears with biases only when model_args' bias is set, exact GELU, and
// an unembedding tied to wte.
#ifndef SPARSE_LAYERS_MODELS_CHECKPOINTS_NANOGPT_CHECKPOINT_H_
#define SPARSE_LAYERS_MODELS_CHECKPOINTS_NANOGPT_CHECKPOINT_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "models/checkpoints/hf_checkpoint.h"

namespace sparse_layers::layers {

// Reads ckpt.pt and builds the model (model_type "nanogpt", in eval mode)
// from model_args (n_layer, n_head, n_embd, block_size, bias, vocab_size) and
// the state dict under 'model', with or without torch.compile's "_orig_mod."
// prefix; the optimizer state and the rest are not read. The context length
// is block_size capped at max_context_length. Every error is one line naming
// the file: not a torch.save zip file or a malformed pickle, a missing 'model'
// or 'model_args', a bad model_args field, a missing, unexpected or wrongly
// shaped tensor, an unsupported dtype (float32, float16 and bfloat16 load).
absl::StatusOr<HuggingFaceModel> LoadNanoGptCheckpoint(
    const std::string& path, int64_t max_context_length = 4096);

}  // namespace sparse_layers::layers

#endif  // SPARSE_LAYERS_MODELS_CHECKPOINTS_NANOGPT_CHECKPOINT_H_
