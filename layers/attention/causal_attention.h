// Causal multi-head self-attention (Vaswani et al. 2017) with optional rotary
// positions; exposes the attention pattern as a hook point.
#ifndef SPARSE_LAYERS_LAYERS_ATTENTION_CAUSAL_ATTENTION_H_
#define SPARSE_LAYERS_LAYERS_ATTENTION_CAUSAL_ATTENTION_H_

#include <torch/torch.h>

#include <string>
#include <vector>

#include "layers/attention/attention.h"
#include "ops/core/causal_mask.h"
#include "ops/core/rms_norm.h"
#include "ops/core/rotary.h"
#include "ops/hooks/hook_point.h"

namespace sparse_layers::layers {

// Registered as attention "mha"; reads d_model, n_heads, context_length,
// rotary, qk_norm (RMSNorm of q and k over the head dimension, one gain shared
// by all heads, before the rotary positions: the backbone of the sgatlin
// authors' code, not in the paper), n_layers and hook_prefix, and the options
// of pretrained models: rotary_dims, rotary_base, rotary_scaling, n_kv_heads
// (qkv then holds [q, k, v] of widths H Dh, Hkv Dh, Hkv Dh) and bias.
class CausalSelfAttentionImpl : public AttentionImpl {
 public:
  explicit CausalSelfAttentionImpl(const AttentionOptions& options);

  // x: (B, T, d_model) -> (B, T, d_model).
  torch::Tensor forward(const torch::Tensor& x) override;

  // Matrix-multiply FLOPs per token at sequence length T (QK^T and AV counted
  // over the full T x T, as Kaplan et al. 2020 do).
  int64_t ForwardFlopsPerToken(int64_t sequence_length) const override;
  std::vector<HookPoint*> HookPoints() override { return {&hook_pattern}; }

  const AttentionOptions& options() const { return options_; }
  torch::nn::Linear qkv{nullptr};
  torch::nn::Linear out{nullptr};
  RmsNorm query_norm{nullptr};  // qk_norm only.
  RmsNorm key_norm{nullptr};
  // (B, H, T, T) softmax probabilities.
  HookPoint hook_pattern;
  // Key and value heads H_kv (H unless grouped-query attention).
  int64_t KeyValueHeads() const;

 private:
  AttentionOptions options_;
  RotaryEmbedding rotary_;
  CausalMask causal_mask_;
};
TORCH_MODULE(CausalSelfAttention);

}  // namespace sparse_layers::layers

#endif  // SPARSE_LAYERS_LAYERS_ATTENTION_CAUSAL_ATTENTION_H_
