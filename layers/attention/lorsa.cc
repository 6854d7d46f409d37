#include "layers/attention/lorsa.h"

#include <cmath>
#include <utility>

#include "ops/core/block_causal_attention.h"
#include "ops/core/largest_k.h"
#include "ops/core/topk.h"

namespace sparse_layers::layers {
namespace {

const AttentionRegistration kLorsa("lorsa", config::AttentionShape::kLorsa,
                                   [](const AttentionOptions& options) {
                                     LorsaOptions lorsa;
                                     lorsa.d_model = options.d_model;
                                     lorsa.qk_heads = options.n_heads;
                                     lorsa.qk_dim = options.qk_dim > 0
                                                        ? options.qk_dim
                                                        : options.d_model /
                                                              options.n_heads;
                                     lorsa.ov_heads = options.ov_heads;
                                     lorsa.top_k = options.lorsa_top_k;
                                     lorsa.context_length =
                                         options.context_length;
                                     lorsa.rotary = options.rotary;
                                     lorsa.rotary_dims = options.rotary_dims;
                                     lorsa.rotary_base = options.rotary_base;
                                     lorsa.rotary_scaling =
                                         options.rotary_scaling;
                                     lorsa.relu = options.relu;
                                     return std::make_shared<LorsaImpl>(lorsa);
                                   });

}  // namespace

LorsaImpl::LorsaImpl(const LorsaOptions& o) : options_(o) {
  TORCH_CHECK(o.qk_heads > 0 && o.ov_heads % o.qk_heads == 0,
              "Lorsa needs OV heads in whole groups per QK head");
  TORCH_CHECK(o.top_k > 0 && o.top_k <= o.ov_heads,
              "Lorsa needs 0 < k <= heads");
  const int64_t d = o.d_model;
  // Kaiming normal (fan_in, ReLU gain), biases 0, as in the Lorsa authors'
  // released code (OpenMOSS/Lorsa, src/models/lorsa.py).
  const double std = std::sqrt(2.0 / d);
  w_q =
      register_parameter("w_q", torch::randn({o.qk_heads, d, o.qk_dim}) * std);
  w_k =
      register_parameter("w_k", torch::randn({o.qk_heads, d, o.qk_dim}) * std);
  b_q = register_parameter("b_q", torch::zeros({o.qk_heads, o.qk_dim}));
  b_k = register_parameter("b_k", torch::zeros({o.qk_heads, o.qk_dim}));
  w_v = register_parameter("w_v", torch::randn({o.ov_heads, d}) * std);
  b_v = register_parameter("b_v", torch::zeros({o.ov_heads}));
  // Unit-norm output rows at init.
  torch::Tensor out = torch::randn({o.ov_heads, d});
  w_o = register_parameter("w_o", out / out.norm(2, 1, true));
  b_o = register_parameter("b_o", torch::zeros({d}));
  TORCH_CHECK(o.rotary_dims <= o.qk_dim, "rotary_dims exceeds the QK dim");
  if (o.rotary) {
    rotary_ =
        RotaryEmbedding(o.rotary_dims > 0 ? o.rotary_dims : o.qk_dim,
                        o.context_length, o.rotary_base, o.rotary_scaling);
  }
  causal_mask_ = CausalMask(o.context_length);
}

std::pair<torch::Tensor, torch::Tensor> LorsaImpl::QueriesAndKeys(
    const torch::Tensor& x) const {
  // (B, H_QK, T, D_QK)
  torch::Tensor q =
      (torch::einsum("btd,gdk->bgtk", {x, w_q}) + b_q.unsqueeze(1));
  torch::Tensor key =
      (torch::einsum("btd,gdk->bgtk", {x, w_k}) + b_k.unsqueeze(1));
  if (rotary_.defined()) {
    q = rotary_.Apply(q);
    key = rotary_.Apply(key);
  }
  return {q, key};
}

torch::Tensor LorsaImpl::GroupedValues(const torch::Tensor& values) const {
  // Mixing is a standard attention with H_QK heads and value width G.
  return values
      .view({values.size(0), values.size(1), options_.qk_heads, group_size()})
      .permute({0, 2, 1, 3});
}

std::pair<TopKCodes, torch::Tensor> LorsaImpl::SelectAndWrite(
    const torch::Tensor& grouped_z, int64_t k) const {
  const torch::Tensor z =
      grouped_z.permute({0, 2, 1, 3})
          .reshape({grouped_z.size(0), grouped_z.size(2), options_.ov_heads});
  const torch::Tensor kept = options_.relu ? torch::relu(z) : z;
  torch::Tensor selected;
  {
    // Rank by the head's output size, z ||w_o|| (footnote 1); no gradient.
    torch::NoGradGuard no_grad;
    const torch::Tensor score =
        (options_.relu ? kept : z.abs()) * w_o.norm(2, 1);
    selected = std::get<1>(LargestK(score, k, /*sorted=*/true));
  }
  const TopKCodes codes{kept.gather(-1, selected), selected};
  // Only the K selected output rows are read (embedding_bag), not all H.
  const torch::Tensor output =
      dense_output ? torch::matmul(Densify(codes, options_.ov_heads), w_o)
                   : SparseDecode(codes, w_o);
  return {codes, output + b_o};
}

LorsaOutput LorsaImpl::Run(const torch::Tensor& x, int64_t k) const {
  const auto [q, key] = QueriesAndKeys(x);
  const torch::Tensor pattern =
      causal_mask_.Softmax(torch::matmul(q, key.transpose(-2, -1)) /
                           std::sqrt(double(options_.qk_dim)));
  const torch::Tensor values = torch::matmul(x, w_v.t()) + b_v;  // (B, T, H)
  auto [codes, output] =
      SelectAndWrite(torch::matmul(pattern, GroupedValues(values)), k);
  return {output, Densify(codes, options_.ov_heads), pattern, values};
}

torch::Tensor LorsaImpl::forward(const torch::Tensor& x) {
  // Only the output: the groups' mixing in query blocks, one sgemm per
  // (window, group) entry (ops/core/block_causal_attention.h), no
  // pattern beyond what its backward keeps; Run's output, row for row.
  TORCH_CHECK(x.size(1) <= options_.context_length, "Lorsa: ", x.size(1),
              " tokens exceed the context length ", options_.context_length);
  const auto [q, key] = QueriesAndKeys(x);
  const torch::Tensor values = torch::matmul(x, w_v.t()) + b_v;
  return SelectAndWrite(BlockCausalAttention(q, key, GroupedValues(values)),
                        options_.top_k)
      .second;
}

void LorsaImpl::InitQkFromAttention(const CausalSelfAttentionImpl& attention) {
  const int64_t mhsa_heads = attention.options().n_heads;
  const int64_t d = options_.d_model, head_dim = d / mhsa_heads;
  TORCH_CHECK(
      options_.qk_heads % mhsa_heads == 0 && head_dim == options_.qk_dim,
      "QK init needs H_QK a multiple of the MHSA heads and D_QK = d_head");
  TORCH_CHECK(!attention.options().qk_norm,
              "QK init cannot copy a normalised QK (Lorsa has no QK norm)");
  const int64_t ratio = options_.qk_heads / mhsa_heads;
  // Grouped-query attention: query head h reads key head h / (H / H_kv).
  const int64_t queries_per_key = mhsa_heads / attention.KeyValueHeads();
  torch::NoGradGuard no_grad;
  // (H Dh + 2 Hkv Dh, d): q rows, then k rows, then v rows.
  const torch::Tensor weight = attention.qkv->weight;
  const torch::Tensor bias = attention.qkv->bias;
  for (int64_t group = 0; group < options_.qk_heads; ++group) {
    const int64_t head = group / ratio;
    const int64_t q_row = head * head_dim;
    const int64_t k_row = d + head / queries_per_key * head_dim;
    w_q[group].copy_(weight.slice(0, q_row, q_row + head_dim).t());
    w_k[group].copy_(weight.slice(0, k_row, k_row + head_dim).t());
    if (bias.defined()) {
      b_q[group].copy_(bias.slice(0, q_row, q_row + head_dim));
      b_k[group].copy_(bias.slice(0, k_row, k_row + head_dim));
    } else {
      b_q[group].zero_();
      b_k[group].zero_();
    }
  }
}

void LorsaImpl::CopyFromAttention(const CausalSelfAttentionImpl& attention) {
  const int64_t d = options_.d_model;
  TORCH_CHECK(options_.qk_heads == attention.options().n_heads &&
                  group_size() == d / attention.options().n_heads,
              "exact copy needs H_QK = H_MHSA and G = d_head");
  InitQkFromAttention(attention);
  torch::NoGradGuard no_grad;
  // OV head (m, r) = m * d_head + r: value row r of head m's value head (m /
  // (H / H_kv) under grouped-query attention), output column r.
  const int64_t heads = attention.options().n_heads, head_dim = d / heads;
  const int64_t kv_heads = attention.KeyValueHeads();
  const int64_t v_row = d + kv_heads * head_dim;
  for (int64_t m = 0; m < heads; ++m) {
    const int64_t row = v_row + m / (heads / kv_heads) * head_dim;
    w_v.slice(0, m * head_dim, (m + 1) * head_dim)
        .copy_(attention.qkv->weight.slice(0, row, row + head_dim));
    const torch::Tensor& bias = attention.qkv->bias;
    b_v.slice(0, m * head_dim, (m + 1) * head_dim)
        .copy_(bias.defined() ? bias.slice(0, row, row + head_dim)
                              : torch::zeros({head_dim}));
  }
  w_o.copy_(attention.out->weight.t());
  b_o.copy_(attention.out->bias.defined() ? attention.out->bias
                                          : torch::zeros_like(b_o));
}

void LorsaImpl::FoldOutputNorms() {
  torch::NoGradGuard no_grad;
  const torch::Tensor norms = w_o.norm(2, 1);
  w_v.mul_(norms.unsqueeze(1));
  b_v.mul_(norms);
  w_o.div_(norms.unsqueeze(1));
}

void LorsaImpl::FoldInputOutputScales(double input_scale, double output_scale) {
  torch::NoGradGuard no_grad;
  w_q.mul_(input_scale);
  w_k.mul_(input_scale);
  w_v.mul_(input_scale);
  w_o.div_(output_scale);
  b_o.div_(output_scale);
}

int64_t LorsaImpl::ForwardFlopsPerToken(int64_t sequence_length) const {
  const auto& o = options_;
  return 2 * 2 * o.d_model * o.qk_heads * o.qk_dim +    // Q, K
         2 * o.qk_heads * sequence_length * o.qk_dim +  // scores
         2 * o.d_model * o.ov_heads +                   // values
         2 * sequence_length * o.ov_heads +             // mixing
         2 * o.top_k * o.d_model;                       // active outputs
}

}  // namespace sparse_layers::layers
