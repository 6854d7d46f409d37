#include "layers/ffn/sgatlin.h"

#include <ATen/record_function.h>

#include <cmath>

#include "ops/backend/batched_gemm.h"
#include "ops/core/topk.h"

namespace sparse_layers::layers {
namespace {

// Truncated normal at +-2 sigma (flax's truncated_normal initialisers), by
// inverse CDF: u ~ U(Phi(-2), Phi(2)), x = sqrt(2) erfinv(2u - 1) std.
torch::Tensor TruncatedNormal(std::vector<int64_t> shape, double std) {
  const double low = 0.5 * std::erfc(2 / std::sqrt(2.0));  // Phi(-2)
  const torch::Tensor u = torch::empty(shape).uniform_(low, 1 - low);
  return torch::erfinv(2 * u - 1) * (std::sqrt(2.0) * std);
}

using Act = ProductKeyOptions::Activation;
using Router = ProductKeyOptions::Router;

std::shared_ptr<FeedForwardImpl> Make(const FeedForwardOptions& o, Act act,
                                      Router router, bool peer) {
  ProductKeyOptions options;
  options.d_model = o.d_model;
  options.d_ffn = o.d_ffn;
  options.channels = o.n_experts > 0 ? o.n_experts : 16;
  options.top_k = o.top_k > 0 ? o.top_k : 8;
  options.d_key = o.d_key > 0 ? o.d_key : 128;
  options.activation = act;
  options.router = router;
  options.peer = peer;
  options.hook_prefix = o.hook_prefix;
  return std::make_shared<ProductKeyFfnImpl>(options);
}

// model.n_experts is the channel count C, model.d_ffn the neurons per channel.
FeedForwardRegistration kSgatlin("sgatlin", config::FfnShape::kProductKey,
                                 [](const FeedForwardOptions& o) {
                                   return Make(o, Act::kIdentity,
                                               Router::kProductDense, false);
                                 });
FeedForwardRegistration kRelu("sgatlin_relu", config::FfnShape::kProductKey,
                              [](const FeedForwardOptions& o) {
                                return Make(o, Act::kRelu,
                                            Router::kProductDense, false);
                              });
FeedForwardRegistration kGelu("sgatlin_gelu", config::FfnShape::kProductKey,
                              [](const FeedForwardOptions& o) {
                                return Make(o, Act::kGelu,
                                            Router::kProductDense, false);
                              });
FeedForwardRegistration kSwish("sgatlin_swish", config::FfnShape::kProductKey,
                               [](const FeedForwardOptions& o) {
                                 return Make(o, Act::kSwish,
                                             Router::kProductDense, false);
                               });
FeedForwardRegistration kPeerRouter("sgatlin_peer_router",
                                    config::FfnShape::kProductKey,
                                    [](const FeedForwardOptions& o) {
                                      return Make(o, Act::kIdentity,
                                                  Router::kProductKeyValue,
                                                  false);
                                    });
FeedForwardRegistration kPeer("peer", config::FfnShape::kProductKey,
                              [](const FeedForwardOptions& o) {
                                return Make(o, Act::kGelu,
                                            Router::kProductKeyValue, true);
                              });

// s[pc] = alpha q[:, pc] keys[pc]^T for each of the 2C query heads: q (N, 2C,
// d_key) read in place, keys (2C, n, d_key); s (2C, N, n). One sgemm per head
// forward and two backward (BatchedGemm), instead of einsum's permuted copies.
class PeerScoresFunction
    : public torch::autograd::Function<PeerScoresFunction> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx,
                               const torch::Tensor& q,
                               const torch::Tensor& keys, double alpha) {
    // A named range: op profiles see the forward, which is no ATen op.
    RECORD_FUNCTION("PeerScores", std::vector<c10::IValue>());
    ctx->save_for_backward({q, keys});
    ctx->saved_data["alpha"] = alpha;
    torch::Tensor s =
        torch::empty({keys.size(0), q.size(0), keys.size(1)}, q.options());
    BatchedGemm(q.transpose(0, 1), keys.transpose(1, 2), alpha, 0, s);
    return s;
  }

  static torch::autograd::variable_list backward(
      torch::autograd::AutogradContext* ctx,
      torch::autograd::variable_list grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor &q = saved[0], &keys = saved[1];
    const double alpha = ctx->saved_data["alpha"].toDouble();
    const torch::Tensor grad = grad_outputs[0].contiguous();  // (2C, N, n)
    torch::Tensor grad_q = torch::empty_like(q);
    BatchedGemm(grad, keys, alpha, 0, grad_q.transpose(0, 1));
    torch::Tensor grad_keys = torch::empty_like(keys);
    BatchedGemm(grad.transpose(1, 2), q.transpose(0, 1), alpha, 0, grad_keys);
    return {grad_q, grad_keys, torch::Tensor()};
  }
};

}  // namespace

torch::Tensor PeerRouterScores(const torch::Tensor& z,
                               const torch::Tensor& query,
                               const torch::Tensor& keys) {
  const int64_t tokens = z.size(0), c = query.size(1), d = query.size(2),
                dk = query.size(3), n = keys.size(2);
  // q_{p,c} = W^Q_{p,c} z for all 2C heads in one product.
  const torch::Tensor q =
      torch::matmul(z, query.permute({2, 0, 1, 3}).reshape({d, 2 * c * dk}))
          .view({tokens, 2 * c, dk});
  // s = q . K / sqrt(2 d_key), laid out (2, C, N, n) and read as (N, 2, C, n).
  return PeerScoresFunction::apply(q, keys.reshape({2 * c, n, dk}),
                                   1 / std::sqrt(2.0 * dk))
      .view({2, c, tokens, n})
      .permute({2, 0, 1, 3});
}

torch::Tensor PeerRouterScoresReference(const torch::Tensor& z,
                                        const torch::Tensor& query,
                                        const torch::Tensor& keys) {
  const torch::Tensor q = torch::einsum("nd,pcde->npce", {z, query});
  return torch::einsum("npce,pcje->npcj", {q, keys}) /
         std::sqrt(2.0 * query.size(3));
}

ProductKeyFfnImpl::ProductKeyFfnImpl(const ProductKeyOptions& options)
    : hook_router_scores(options.hook_prefix + "hook_router_scores"),
      hook_router_indices(options.hook_prefix + "hook_router_indices"),
      options_(options) {
  n_ = static_cast<int64_t>(std::llround(std::sqrt(double(options.d_ffn))));
  TORCH_CHECK(n_ * n_ == options.d_ffn, "d_ffn must be a perfect square");
  TORCH_CHECK(options.top_k < n_, "product-key top-k needs k < sqrt(d_ffn)");
  const int64_t d = options.d_model, c = options.channels, dk = options.d_key;
  if (options.router == Router::kProductDense) {
    // LeCun normal: std 1/sqrt(fan_in) (arXiv:2606.07414 Listing 1 and the
    // authors' code).
    query = register_parameter(
        "query", TruncatedNormal({dk, d}, 1 / std::sqrt(double(d))));
    keys = register_parameter(
        "keys", TruncatedNormal({2 * c * n_, dk}, 1 / std::sqrt(double(dk))));
  } else {
    query = register_parameter(
        "query", TruncatedNormal({2, c, d, dk}, 1 / std::sqrt(double(d))));
    // truncated_normal(stddev=1) with no std correction (the PEER router of
    // the sgatlin authors' code).
    keys = register_parameter("keys", TruncatedNormal({2, c, n_, dk}, 1.0));
  }
  const int64_t rows = options.peer ? options.d_ffn : c * options.d_ffn;
  // fan_in = d_ffn for both expert matrices (the code's batch axes).
  const double expert_std = 1 / std::sqrt(double(options.d_ffn));
  experts_in =
      register_parameter("experts_in", TruncatedNormal({rows, d}, expert_std));
  experts_out =
      register_parameter("experts_out", TruncatedNormal({rows, d}, expert_std));
}

ProductTopK ProductKeyFfnImpl::Route(const torch::Tensor& z) const {
  const int64_t tokens = z.size(0), c = options_.channels;
  torch::Tensor s;  // (N, 2, C, n)
  if (options_.router == Router::kProductDense) {
    s = torch::matmul(torch::matmul(z, query.t()), keys.t())
            .view({tokens, 2, c, n_});
  } else {
    s = PeerRouterScores(z, query, keys);
  }
  return ProductKeyTopKOfHalves(s, options_.top_k);
}

torch::Tensor ProductKeyFfnImpl::Forward(const torch::Tensor& input,
                                         const HookPoint& hidden) {
  const torch::Tensor z = input.reshape({-1, input.size(-1)});
  const int64_t tokens = z.size(0), c = options_.channels, k = options_.top_k;
  ProductTopK routing = Route(z);  // (N, C, k)
  if (hook_router_scores.active()) {
    routing.scores = hook_router_scores(routing.scores);
  }
  if (hook_router_indices.active()) {
    routing.indices = hook_router_indices(routing.indices);
  }
  torch::Tensor rows = routing.indices;
  if (!options_.peer) {
    rows = rows +
           torch::arange(c, rows.options()).view({1, c, 1}) * options_.d_ffn;
  }
  rows = rows.reshape({tokens, c * k});
  // Only the C*k selected neurons are read (the non-zero gates of
  // arXiv:2606.07414 Eq. 2), without materialising them per token.
  torch::Tensor h = SparseDot(z, experts_in, rows);  // (N, C*k)
  const torch::Tensor gates = routing.scores.reshape({tokens, c * k});
  if (options_.peer) {
    h = torch::gelu(h) *
        torch::softmax(routing.scores, -1).reshape({tokens, c * k});
  } else {
    h = h * gates;  // Raw scores as gates, then the ablation's activation.
    switch (options_.activation) {
      case Act::kRelu:
        h = torch::relu(h);
        break;
      case Act::kGelu:
        h = torch::gelu(h, "tanh");  // jax.nn.gelu's default approximation.
        break;
      case Act::kSwish:
        h = torch::silu(h);
        break;
      default:
        break;
    }
  }
  if (hidden.active()) h = hidden(h);
  return SparseDecode({h, rows}, experts_out).view(input.sizes());
}

int64_t ProductKeyFfnImpl::ForwardFlopsPerToken() const {
  const int64_t d = options_.d_model, c = options_.channels,
                dk = options_.d_key;
  const int64_t experts = 2 * 2 * options_.top_k * c * d;
  if (options_.router == Router::kProductDense) {
    return 2 * dk * d + 2 * 2 * c * n_ * dk + experts;
  }
  return 2 * 2 * c * dk * d + 2 * 2 * c * n_ * dk + experts;
}

}  // namespace sparse_layers::layers
