#include "layers/attention/causal_attention.h"

#include <cmath>

#include "ops/core/block_causal_attention.h"

namespace sparse_layers::layers {
namespace {

// Query rows per block of the causal kernel: at T = 256, 10 of the 16 score
// tiles are computed (//ops/core:block_causal_attention_benchmark).
constexpr int64_t kAttentionBlockTokens = 64;

const AttentionRegistration kMha(
    "mha", config::AttentionShape::kMultiHead,
    [](const AttentionOptions& options) {
      return std::make_shared<CausalSelfAttentionImpl>(options);
    });

}  // namespace

CausalSelfAttentionImpl::CausalSelfAttentionImpl(
    const AttentionOptions& options)
    : hook_pattern(options.hook_prefix + "hook_pattern"), options_(options) {
  TORCH_CHECK(options.d_model % options.n_heads == 0,
              "d_model must be divisible by n_heads");
  const int64_t head_dim = options.d_model / options.n_heads;
  const int64_t kv_heads = KeyValueHeads();
  TORCH_CHECK(options.n_heads % kv_heads == 0,
              "n_heads must be a multiple of n_kv_heads");
  const int64_t rotary_dims =
      options.rotary_dims > 0 ? options.rotary_dims : head_dim;
  TORCH_CHECK(rotary_dims <= head_dim, "rotary_dims exceeds the head dim");
  qkv = register_module(
      "qkv", torch::nn::Linear(torch::nn::LinearOptions(
                                   options.d_model,
                                   (options.n_heads + 2 * kv_heads) * head_dim)
                                   .bias(options.bias)));
  out = register_module(
      "out", torch::nn::Linear(
                 torch::nn::LinearOptions(options.d_model, options.d_model)
                     .bias(options.bias)));
  torch::NoGradGuard no_grad;
  torch::nn::init::normal_(qkv->weight, 0.0, 0.02);
  torch::nn::init::normal_(out->weight, 0.0,
                           0.02 / std::sqrt(2.0 * options.n_layers));
  if (options.bias) {
    qkv->bias.zero_();
    out->bias.zero_();
  }
  if (options.qk_norm) {
    query_norm = register_module("query_norm", RmsNorm(head_dim));
    key_norm = register_module("key_norm", RmsNorm(head_dim));
  }
  if (options.rotary) {
    rotary_ = RotaryEmbedding(rotary_dims, options.context_length,
                              options.rotary_base, options.rotary_scaling);
  }
  causal_mask_ = CausalMask(options.context_length);
}

int64_t CausalSelfAttentionImpl::KeyValueHeads() const {
  return options_.n_kv_heads > 0 ? options_.n_kv_heads : options_.n_heads;
}

torch::Tensor CausalSelfAttentionImpl::forward(const torch::Tensor& x) {
  const int64_t batch = x.size(0);
  const int64_t length = x.size(1);
  const int64_t heads = options_.n_heads;
  const int64_t head_dim = options_.d_model / heads;
  torch::Tensor q, k, v;
  if (options_.n_kv_heads == 0) {
    // (B, T, 3, H, Dh) -> three (B, H, T, Dh).
    const auto parts = qkv->forward(x)
                           .view({batch, length, 3, heads, head_dim})
                           .permute({2, 0, 3, 1, 4})
                           .unbind(0);
    q = parts[0];
    k = parts[1];
    v = parts[2];
  } else {
    // [q (H Dh), k (Hkv Dh), v (Hkv Dh)]; each key/value head serves a run of
    // H / Hkv consecutive query heads.
    const int64_t kv_heads = KeyValueHeads();
    const auto parts = qkv->forward(x).split_with_sizes(
        {heads * head_dim, kv_heads * head_dim, kv_heads * head_dim}, -1);
    auto split_heads = [&](const torch::Tensor& t, int64_t n) {
      return t.view({batch, length, n, head_dim}).transpose(1, 2);
    };
    q = split_heads(parts[0], heads);
    k = split_heads(parts[1], kv_heads).repeat_interleave(heads / kv_heads, 1);
    v = split_heads(parts[2], kv_heads).repeat_interleave(heads / kv_heads, 1);
  }
  if (options_.qk_norm) {
    q = query_norm->forward(q);
    k = key_norm->forward(k);
  }
  if (rotary_.defined()) {
    q = rotary_.Apply(q);
    k = rotary_.Apply(k);
  }
  torch::Tensor heads_out;
  if (hook_pattern.active()) {
    // A pattern hook reads or edits the full (B, H, T, T) pattern.
    const torch::Tensor scores = torch::matmul(q, k.transpose(-2, -1)) *
                                 (1.0 / std::sqrt(double(head_dim)));
    heads_out = torch::matmul(hook_pattern(causal_mask_.Softmax(scores)), v);
  } else {
    heads_out = BlockCausalAttention(q, k, v, kAttentionBlockTokens);
  }
  const torch::Tensor mixed =
      heads_out.transpose(1, 2).reshape({batch, length, options_.d_model});
  return out->forward(mixed);
}

int64_t CausalSelfAttentionImpl::ForwardFlopsPerToken(
    int64_t sequence_length) const {
  const int64_t d = options_.d_model;
  const int64_t qkv_width =
      d + 2 * KeyValueHeads() * (options_.d_model / options_.n_heads);
  return 2 * d * qkv_width + 2 * d * d + 2 * 2 * sequence_length * d;
}

}  // namespace sparse_layers::layers
