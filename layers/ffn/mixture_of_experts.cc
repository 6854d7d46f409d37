#include "layers/ffn/mixture_of_experts.h"

#include <cmath>

#include "layers/ffn/expert_dispatch.h"
#include "ops/core/grouped_linear.h"

namespace sparse_layers::layers {
namespace {

MixtureOptions FromFeedForward(const FeedForwardOptions& o, Activation act,
                               MixtureOptions::Router router) {
  MixtureOptions options;
  options.d_model = o.d_model;
  options.d_ffn = o.d_ffn;
  options.n_experts = o.n_experts;
  options.top_k = o.top_k;
  options.activation = act;
  options.router = router;
  options.n_layers = o.n_layers;
  options.router_sigma_is_variance = o.variants.router_sigma_is_variance;
  options.load_balance_weight = o.variants.load_balance_weight;
  return options;
}

template <Activation kAct, MixtureOptions::Router kRouter>
std::shared_ptr<FeedForwardImpl> Make(const FeedForwardOptions& o) {
  return std::make_shared<MixtureOfExpertsImpl>(
      FromFeedForward(o, kAct, kRouter));
}

using Router = MixtureOptions::Router;
// MoE-X (arXiv:2503.07639) Table 1 / Table 3 variants.
FeedForwardRegistration kSwitch("switch", config::FfnShape::kMixture,
                                Make<Activation::kGelu, Router::kLearned>);
FeedForwardRegistration kMoeX("moe_x", config::FfnShape::kMixture,
                              Make<Activation::kRelu, Router::kSparsityAware>);
FeedForwardRegistration kGeluSparsity(
    "moe_gelu_sparsity_router", config::FfnShape::kMixture,
    Make<Activation::kGelu, Router::kSparsityAware>);
FeedForwardRegistration kReluLearned("moe_relu_topk_router",
                                     config::FfnShape::kMixture,
                                     Make<Activation::kRelu, Router::kLearned>);

}  // namespace

MixtureOfExpertsImpl::MixtureOfExpertsImpl(const MixtureOptions& options)
    : options_(options) {
  TORCH_CHECK(options.n_experts > 0 && options.top_k > 0 &&
                  options.top_k <= options.n_experts,
              "a mixture needs 0 < top_k <= n_experts");
  const int64_t m = options.n_experts, dh = options.d_ffn, d = options.d_model;
  // nanoGPT init: N(0, 0.02^2), output projections / sqrt(2L) (MoE-X,
  // arXiv:2503.07639 Sec. 3.1, trains GPT-2-like models and states no init).
  encoders = register_parameter("encoders", torch::randn({m, dh, d}) * 0.02);
  decoders = register_parameter(
      "decoders",
      torch::randn({m, dh, d}) * (0.02 / std::sqrt(2.0 * options.n_layers)));
  if (options.router == Router::kLearned) {
    router = register_parameter("router", torch::randn({m, d}) * 0.02);
  }
}

torch::Tensor MixtureOfExpertsImpl::Activate(const torch::Tensor& h) const {
  return options_.activation == Activation::kGelu ? torch::gelu(h)
                                                  : torch::relu(h);
}

Routing MixtureOfExpertsImpl::Route(const torch::Tensor& x) const {
  torch::Tensor scores;
  if (options_.router == Router::kLearned) {
    scores = torch::matmul(x, router.t());  // r = W_g x, no bias.
  } else {
    // s_j = -erf(mu_h / (sqrt(2) sigma_h)) = 1 - 2 Phi(mu_h / sigma_h): minus
    // the expected active fraction, from the column statistics of W_enc.
    const torch::Tensor mean = encoders.mean(1);  // (M, d)
    const torch::Tensor variance =
        encoders.var(1, /*unbiased=*/false);              // (M, d)
    const torch::Tensor mu = torch::matmul(x, mean.t());  // (N, M)
    torch::Tensor sigma = torch::matmul(x * x, variance.t()) + 1e-6;
    if (!options_.router_sigma_is_variance) sigma = sigma.sqrt();
    scores = -torch::erf(mu / (std::sqrt(2.0) * sigma));
  }
  torch::Tensor kept, experts;
  {
    torch::NoGradGuard no_grad;
    experts = std::get<1>(scores.topk(options_.top_k, -1));
  }
  kept = scores.gather(-1, experts);
  return {torch::softmax(kept, -1), experts, scores};
}

torch::Tensor MixtureOfExpertsImpl::AllPreActivations(
    const torch::Tensor& x) const {
  return torch::einsum("nd,mhd->nmh", {x, encoders});
}

torch::Tensor MixtureOfExpertsImpl::WideCode(const torch::Tensor& x) const {
  const Routing routing = Route(x);
  const torch::Tensor gates =
      torch::zeros_like(routing.scores)
          .scatter(-1, routing.experts, routing.weights);
  return (Activate(AllPreActivations(x)) * gates.unsqueeze(-1))
      .reshape({x.size(0), -1});
}

torch::Tensor MixtureOfExpertsImpl::WideDecoder() const {
  return decoders.reshape({-1, options_.d_model});
}

torch::Tensor MixtureOfExpertsImpl::ForwardDense(const torch::Tensor& x) const {
  return torch::matmul(WideCode(x), WideDecoder());
}

torch::Tensor MixtureOfExpertsImpl::Forward(const torch::Tensor& input,
                                            const HookPoint& hidden) {
  const torch::Tensor x = input.reshape({-1, input.size(-1)});
  const Routing routing = Route(x);
  const int64_t m = options_.n_experts;
  if (is_training() && options_.load_balance_weight > 0) {
    // f_i: share of tokens whose top-1 expert is i (no gradient); P_i: mean
    // softmax probability over all M experts.
    const torch::Tensor probabilities = torch::softmax(routing.scores, -1);
    torch::Tensor fraction;
    {
      torch::NoGradGuard no_grad;
      fraction =
          torch::one_hot(probabilities.argmax(-1), m).to(x.dtype()).mean(0);
    }
    load_balance_loss_ = options_.load_balance_weight * m *
                         (fraction * probabilities.mean(0)).sum();
  } else {
    load_balance_loss_ = torch::Tensor();
  }
  if (hidden.active()) {
    // The hook sees (and may edit) the wide code z; decode it densely.
    return torch::matmul(hidden(WideCode(x)), WideDecoder())
        .view(input.sizes());
  }
  // The experts side by side on their own rows (GroupedLinear), no split of
  // the rows in and no cat out.
  const ExpertSlots slots =
      SortSlotsByExpert(routing.experts, options_.n_experts);
  const torch::Tensor hidden_rows = Activate(
      GroupedLinear(x.index_select(0, slots.tokens), encoders,
                    slots.rows_per_expert, GroupWeightLayout::kOutByIn));
  const torch::Tensor output = CombineExpertOutputs(
      GroupedLinear(hidden_rows, decoders, slots.rows_per_expert,
                    GroupWeightLayout::kInByOut),
      slots, routing.weights, x);
  return output.view(input.sizes());
}

int64_t MixtureOfExpertsImpl::ForwardFlopsPerToken() const {
  const auto& o = options_;
  return o.top_k * 2 * 2 * o.d_model * o.d_ffn + 2 * o.d_model * o.n_experts;
}

void MixtureOfExpertsImpl::UpcycleFrom(const DenseMlpImpl& dense,
                                       double noise_rel) {
  torch::NoGradGuard no_grad;
  TORCH_CHECK(dense.in->weight.size(0) == options_.d_ffn,
              "upcycling needs the dense width to equal the expert width");
  const torch::Tensor w_in = dense.in->weight;    // (D, d)
  const torch::Tensor w_out = dense.out->weight;  // (d, D)
  for (int64_t j = 0; j < options_.n_experts; ++j) {
    encoders[j].copy_(w_in +
                      torch::randn_like(w_in) * (noise_rel * w_in.std()));
    decoders[j].copy_(w_out.t() +
                      torch::randn_like(w_in) * (noise_rel * w_out.std()));
  }
  if (router.defined()) router.normal_(0.0, 0.02);
}

}  // namespace sparse_layers::layers
