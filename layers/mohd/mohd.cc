#include "layers/mohd/mohd.h"

#include <cmath>

#include "ops/core/block_causal_attention.h"

namespace sparse_layers::layers {
namespace {

// Registered with model.n_experts = N, model.top_k = K; S = K - 1 unless
// layer_options say otherwise (the paper's 3-shared-of-4 default shape,
// arXiv:2412.05644 Table 3).
FeedForwardRegistration kMohdFfn(
    "mohd_swiglu", config::FfnShape::kMohd, [](const FeedForwardOptions& o) {
      auto ffn = std::make_shared<MohdFfnImpl>(
          MohdOptionsFor(o.d_model, o.n_experts, o.top_k, o.variants), o.d_ffn,
          o.n_layers);
      ffn->gather_sparse = o.variants.gather_sparse;
      return ffn;
    });

// The same N and K (model.n_experts, model.top_k) on the attention side.
AttentionRegistration kMohdAttention(
    "mohd", config::AttentionShape::kMohd, [](const AttentionOptions& o) {
      auto attention = std::make_shared<MohdAttentionImpl>(
          MohdOptionsFor(o.d_model, o.n_experts, o.top_k, o.variants),
          o.inner > 0 ? o.inner : o.d_model, o.n_heads, o.context_length,
          o.n_layers);
      attention->gather_sparse = o.variants.gather_sparse;
      return attention;
    });

// The tokens that selected each routed sub-dim (undefined for shared ones).
std::vector<torch::Tensor> TokensPerSubDim(const MohdOptions& o,
                                           const torch::Tensor& mask) {
  std::vector<torch::Tensor> tokens_of(o.sub_dims);
  for (int64_t j = o.shared; j < o.sub_dims; ++j) {
    tokens_of[j] = mask.select(1, j).nonzero().view({-1});
  }
  return tokens_of;
}

// (x * w) @ W for each W (D, n) from the active input rows only: one matmul
// over the shared blocks, then each routed block for the tokens that chose it.
std::vector<torch::Tensor> ProjectActiveRows(
    const MohdOptions& o, const torch::Tensor& x, const torch::Tensor& w,
    const std::vector<torch::Tensor>& tokens_of,
    const std::vector<torch::Tensor>& matrices) {
  const int64_t d_e = o.d_model / o.sub_dims, shared = o.shared * d_e;
  const torch::Tensor shared_in = x.slice(1, 0, shared) * w.slice(1, 0, shared);
  std::vector<torch::Tensor> outputs;
  for (const torch::Tensor& m : matrices) {
    outputs.push_back(torch::matmul(shared_in, m.slice(0, 0, shared)));
  }
  for (int64_t j = o.shared; j < o.sub_dims; ++j) {
    const torch::Tensor& tokens = tokens_of[j];
    if (tokens.numel() == 0) continue;
    const torch::Tensor block =
        (x.index_select(0, tokens) * w.index_select(0, tokens))
            .slice(1, j * d_e, (j + 1) * d_e);
    for (size_t i = 0; i < matrices.size(); ++i) {
      outputs[i] = outputs[i].index_add(
          0, tokens,
          torch::matmul(block, matrices[i].slice(0, j * d_e, (j + 1) * d_e)));
    }
  }
  return outputs;
}

// (h @ W) * w for W (n, D), computing only the active output columns (the
// inactive ones are zero because w is).
torch::Tensor ProjectActiveColumns(
    const MohdOptions& o, const torch::Tensor& h, const torch::Tensor& matrix,
    const torch::Tensor& w, const std::vector<torch::Tensor>& tokens_of) {
  const int64_t d_e = o.d_model / o.sub_dims, shared = o.shared * d_e;
  std::vector<torch::Tensor> blocks = {
      torch::matmul(h, matrix.slice(1, 0, shared)) * w.slice(1, 0, shared)};
  for (int64_t j = o.shared; j < o.sub_dims; ++j) {
    const torch::Tensor& tokens = tokens_of[j];
    torch::Tensor block = torch::zeros({h.size(0), d_e}, h.options());
    if (tokens.numel() > 0) {
      const torch::Tensor out =
          torch::matmul(h.index_select(0, tokens),
                        matrix.slice(1, j * d_e, (j + 1) * d_e)) *
          w.index_select(0, tokens).slice(1, j * d_e, (j + 1) * d_e);
      block = block.index_add(0, tokens, out);
    }
    blocks.push_back(block);
  }
  return torch::cat(blocks, 1);
}

}  // namespace

MohdGateImpl::MohdGateImpl(const MohdOptions& o) : options_(o) {
  TORCH_CHECK(o.sub_dims > 0 && o.d_model % o.sub_dims == 0,
              "MoHD needs D divisible by N");
  TORCH_CHECK(o.shared <= o.top_k && o.top_k <= o.sub_dims,
              "MoHD needs S <= K <= N");
  router = register_parameter("router",
                              torch::randn({o.d_model, o.sub_dims}) * 0.02);
  fusion = register_parameter("fusion", torch::eye(o.sub_dims));
  if (!o.fusion) fusion.set_requires_grad(false);
}

MohdRouting MohdGateImpl::Route(const torch::Tensor& x) {
  const auto& o = options_;
  const int64_t tokens = x.size(0), routed = o.top_k - o.shared;
  const torch::Tensor logits = torch::matmul(x, router);  // (T, N)
  const torch::Tensor s =
      torch::softmax(logits, -1);  // Over all N, shared too.
  torch::Tensor mask = torch::zeros_like(s);
  torch::Tensor chosen;
  {
    torch::NoGradGuard no_grad;
    mask.slice(1, 0, o.shared).fill_(1);
    if (routed > 0) {
      const torch::Tensor candidates =
          o.random_routing ? torch::rand({tokens, o.sub_dims - o.shared})
                           : s.slice(1, o.shared).detach();
      chosen = std::get<1>(candidates.topk(routed, -1)) + o.shared;
      mask.scatter_(1, chosen, 1.0);
    }
  }
  const torch::Tensor g = s * mask;
  torch::Tensor alpha;
  switch (o.scaling) {
    case config::LayerOptions::RENORM:
      alpha = o.top_k / g.sum(-1, true);
      break;
    case config::LayerOptions::CONST_N:
      alpha = torch::full({tokens, 1}, double(o.sub_dims), x.options());
      break;
    case config::LayerOptions::LITERAL:
      alpha = o.sub_dims * g.sum(-1, true);
      break;
    default:
      alpha = torch::ones({tokens, 1}, x.options());
  }
  MohdRouting routing{alpha * g, mask, {}};
  if (routed > 0 && o.balance_weight > 0 && is_training() &&
      !o.random_routing) {
    // beta * sum_i f_i P_i over the specialised sub-dims; = beta when balanced.
    const int64_t specialised = o.sub_dims - o.shared;
    const torch::Tensor p = torch::softmax(logits.slice(1, o.shared), -1);
    const torch::Tensor f = mask.slice(1, o.shared).sum(0) *
                            (double(specialised) / (routed * tokens));
    routing.balance = o.balance_weight * (f * p.mean(0)).sum();
  }
  return routing;
}

torch::Tensor MohdGateImpl::Expand(const torch::Tensor& per_sub_dim) const {
  return per_sub_dim.repeat_interleave(options_.d_model / options_.sub_dims,
                                       -1);
}

torch::Tensor MohdGateImpl::Fuse(const torch::Tensor& y) const {
  if (!options_.fusion) return y;
  const int64_t n = options_.sub_dims;
  return torch::einsum("ij,tjd->tid", {fusion, y.view({y.size(0), n, -1})})
      .reshape(y.sizes());
}

MohdFfnImpl::MohdFfnImpl(const MohdOptions& options, int64_t d_ff,
                         int64_t n_layers)
    : options_(options), d_ff_(d_ff) {
  gate = register_module("gate", MohdGate(options));
  const int64_t d = options.d_model;
  w_gate = register_parameter("w_gate", torch::randn({d, d_ff}) * 0.02);
  w_up = register_parameter("w_up", torch::randn({d, d_ff}) * 0.02);
  w_down = register_parameter(
      "w_down", torch::randn({d_ff, d}) * (0.02 / std::sqrt(2.0 * n_layers)));
}

torch::Tensor MohdFfnImpl::ForwardGatherSparse(const torch::Tensor& x) {
  const MohdRouting routing = gate->Route(x);
  balance_ = routing.balance;
  const torch::Tensor w = gate->Expand(routing.weights);
  const auto tokens_of = TokensPerSubDim(options_, routing.mask);
  const auto pre = ProjectActiveRows(options_, x, w, tokens_of, {w_gate, w_up});
  const torch::Tensor h = torch::silu(pre[0]) * pre[1];
  return gate->Fuse(ProjectActiveColumns(options_, h, w_down, w, tokens_of));
}

torch::Tensor MohdFfnImpl::Forward(const torch::Tensor& input,
                                   const HookPoint& hidden) {
  const torch::Tensor x = input.reshape({-1, input.size(-1)});
  if (gather_sparse && !hidden.active()) {
    return ForwardGatherSparse(x).view(input.sizes());
  }
  const MohdRouting routing = gate->Route(x);
  balance_ = routing.balance;
  const torch::Tensor w = gate->Expand(routing.weights);  // (T, D)
  // Eqs. 14-16: router weights on the input rows and the output columns.
  const torch::Tensor scaled = x * w;
  torch::Tensor h =
      torch::silu(torch::matmul(scaled, w_gate)) * torch::matmul(scaled, w_up);
  if (hidden.active()) h = hidden(h);
  const torch::Tensor y = torch::matmul(h, w_down) * w;
  return gate->Fuse(y).view(input.sizes());
}

int64_t MohdFfnImpl::ForwardFlopsPerToken() const {
  const auto& o = options_;
  const int64_t active_width = o.top_k * (o.d_model / o.sub_dims);
  return 6 * active_width * d_ff_ + 2 * o.d_model * o.sub_dims +
         (o.fusion ? 2 * o.sub_dims * active_width : 0);
}

MohdAttentionImpl::MohdAttentionImpl(const MohdOptions& options, int64_t inner,
                                     int64_t n_heads, int64_t context_length,
                                     int64_t n_layers)
    : options_(options), inner_(inner), heads_(n_heads) {
  TORCH_CHECK(inner % n_heads == 0, "inner width must divide by heads");
  gate = register_module("gate", MohdGate(options));
  const int64_t d = options.d_model;
  w_q = register_parameter("w_q", torch::randn({d, inner}) * 0.02);
  w_k = register_parameter("w_k", torch::randn({d, inner}) * 0.02);
  w_v = register_parameter("w_v", torch::randn({d, inner}) * 0.02);
  w_o = register_parameter(
      "w_o", torch::randn({inner, d}) * (0.02 / std::sqrt(2.0 * n_layers)));
  rotary_ = RotaryEmbedding(inner / n_heads, context_length);
}

torch::Tensor MohdAttentionImpl::forward(const torch::Tensor& x) {
  const int64_t batch = x.size(0), length = x.size(1),
                head_dim = inner_ / heads_;
  const torch::Tensor flat = x.reshape({-1, x.size(-1)});
  const MohdRouting routing = gate->Route(flat);
  balance_ = routing.balance;
  const torch::Tensor w = gate->Expand(routing.weights);
  std::vector<torch::Tensor> tokens_of;
  std::vector<torch::Tensor> qkv;
  if (gather_sparse) {
    tokens_of = TokensPerSubDim(options_, routing.mask);
    qkv = ProjectActiveRows(options_, flat, w, tokens_of, {w_q, w_k, w_v});
  } else {
    const torch::Tensor scaled = flat * w;  // Eq. 14 on the input rows.
    qkv = {torch::matmul(scaled, w_q), torch::matmul(scaled, w_k),
           torch::matmul(scaled, w_v)};
  }
  auto heads = [&](const torch::Tensor& t) {
    return t.view({batch, length, heads_, head_dim}).transpose(1, 2);
  };
  const torch::Tensor q = rotary_.Apply(heads(qkv[0]));
  const torch::Tensor k = rotary_.Apply(heads(qkv[1]));
  const torch::Tensor v = heads(qkv[2]);
  // The dense model's causal kernel: one sgemm per (batch, head) on the views'
  // strides and the masked half skipped, not ATen's per-entry bmm loop.
  const torch::Tensor mixed =
      BlockCausalAttention(q, k, v).transpose(1, 2).reshape({-1, inner_});
  const torch::Tensor y =
      gather_sparse ? ProjectActiveColumns(options_, mixed, w_o, w, tokens_of)
                    : torch::matmul(mixed, w_o) * w;
  return gate->Fuse(y).view(x.sizes());
}

int64_t MohdAttentionImpl::ForwardFlopsPerToken(int64_t sequence_length) const {
  const auto& o = options_;
  const int64_t active_width = o.top_k * (o.d_model / o.sub_dims);
  return 2 * active_width * 4 * inner_ + 4 * sequence_length * inner_ +
         2 * o.d_model * o.sub_dims +
         (o.fusion ? 2 * o.sub_dims * active_width : 0);
}

MohdOptions MohdOptionsFor(int64_t d_model, int64_t sub_dims, int64_t active,
                           const LayerVariants& variants) {
  MohdOptions options;
  options.d_model = d_model;
  options.sub_dims = sub_dims;
  options.top_k = active;
  options.shared = variants.mohd_shared >= 0 ? variants.mohd_shared
                                             : std::max<int64_t>(0, active - 1);
  options.scaling = variants.mohd_scaling;
  options.fusion = variants.mohd_fusion;
  options.random_routing = variants.mohd_random_routing;
  options.balance_weight = variants.mohd_balance_weight;
  return options;
}

int64_t MohdLayerParameters(int64_t width, int64_t q, int64_t kv,
                            int64_t d_ff) {
  return width * (q + 2 * kv) + q * width + 3 * width * d_ff;
}

int64_t MohdActivatedParameters(int64_t layers, int64_t attention_width,
                                int64_t ffn_width, int64_t q, int64_t kv,
                                int64_t d_ff) {
  return layers * (attention_width * (2 * q + 2 * kv) + 3 * ffn_width * d_ff);
}

int64_t MohdTotalParameters(int64_t layers, int64_t d_model, int64_t q,
                            int64_t kv, int64_t d_ff, int64_t vocab) {
  return layers * MohdLayerParameters(d_model, q, kv, d_ff) +
         2 * vocab * d_model;
}

}  // namespace sparse_layers::layers
