#include "layers/ffn/gpt_oss_glu.h"

#include <cmath>

#include "layers/ffn/expert_dispatch.h"
#include "ops/core/grouped_linear.h"

namespace sparse_layers::layers {
namespace {

FeedForwardRegistration kGlu("gpt_oss_glu", config::FfnShape::kDense,
                             [](const FeedForwardOptions& o) {
                               return std::make_shared<ClampedGluImpl>(o);
                             });
FeedForwardRegistration kMoe("gpt_oss_moe", config::FfnShape::kMixture,
                             [](const FeedForwardOptions& o) {
                               return std::make_shared<GptOssMoeImpl>(o);
                             });

torch::Tensor Normal(std::vector<int64_t> shape, double std) {
  return torch::randn(shape) * std;
}

// h = min(a,7) sigmoid(1.702 min(a,7)) (clip(b,-7,7)+1) of ab = [a; b]:
// (rows, 2F) -> (rows, F).
torch::Tensor ClampedGluHidden(const torch::Tensor& ab) {
  const int64_t f = ab.size(-1) / 2;
  const torch::Tensor a = ab.slice(-1, 0, f).clamp_max(7.0);
  const torch::Tensor b = ab.slice(-1, f).clamp(-7.0, 7.0);
  return a * torch::sigmoid(1.702 * a) * (b + 1);
}

}  // namespace

torch::Tensor ClampedGlu(const torch::Tensor& x, const torch::Tensor& w1,
                         const torch::Tensor& b1, const torch::Tensor& w2,
                         const torch::Tensor& b2, const HookPoint* hidden) {
  torch::Tensor h = ClampedGluHidden(torch::addmm(b1, x, w1.t()));
  if (hidden != nullptr && hidden->active()) h = (*hidden)(h);
  return torch::addmm(b2, h, w2.t());
}

ClampedGluImpl::ClampedGluImpl(const FeedForwardOptions& o) : options_(o) {
  const int64_t d = o.d_model, f = o.d_ffn;
  w1 = register_parameter("w1", Normal({2 * f, d}, 1 / std::sqrt(double(d))));
  b1 = register_parameter("b1", torch::zeros({2 * f}));
  w2 = register_parameter("w2", Normal({d, f}, 1 / std::sqrt(double(f))));
  b2 = register_parameter("b2", torch::zeros({d}));
}

torch::Tensor ClampedGluImpl::Forward(const torch::Tensor& input,
                                      const HookPoint& hidden) {
  const torch::Tensor x = input.reshape({-1, input.size(-1)});
  return ClampedGlu(x, w1, b1, w2, b2, &hidden).view(input.sizes());
}

int64_t ClampedGluImpl::ForwardFlopsPerToken() const {
  return 3 * 2 * options_.d_model * options_.d_ffn;
}

GptOssMoeImpl::GptOssMoeImpl(const FeedForwardOptions& o) : options_(o) {
  TORCH_CHECK(o.n_experts > 0 && o.top_k > 0 && o.top_k <= o.n_experts,
              "gpt_oss_moe needs 0 < top_k <= n_experts");
  const int64_t e = o.n_experts, d = o.d_model, f = o.d_ffn;
  router =
      register_parameter("router", Normal({e, d}, 1 / std::sqrt(double(d))));
  w1 =
      register_parameter("w1", Normal({e, 2 * f, d}, 1 / std::sqrt(double(d))));
  b1 = register_parameter("b1", torch::zeros({e, 2 * f}));
  w2 = register_parameter("w2", Normal({e, d, f}, 1 / std::sqrt(double(f))));
  b2 = register_parameter("b2", torch::zeros({e, d}));
}

torch::Tensor GptOssMoeImpl::Forward(const torch::Tensor& input,
                                     const HookPoint& hidden) {
  const torch::Tensor x = input.reshape({-1, input.size(-1)});
  const int64_t e = options_.n_experts, k = options_.top_k;
  const torch::Tensor p = torch::softmax(torch::matmul(x, router.t()), -1);
  torch::Tensor chosen;
  {
    torch::NoGradGuard no_grad;
    chosen = std::get<1>(p.topk(k, -1));
  }
  // The experts side by side on their own rows (GroupedLinear); each sorted
  // row adds its expert's biases.
  const ExpertSlots slots = SortSlotsByExpert(chosen, e);
  const torch::Tensor hidden_rows = ClampedGluHidden(
      GroupedLinear(x.index_select(0, slots.tokens), w1, slots.rows_per_expert,
                    GroupWeightLayout::kOutByIn) +
      b1.index_select(0, slots.experts));
  const torch::Tensor output =
      CombineExpertOutputs(GroupedLinear(hidden_rows, w2, slots.rows_per_expert,
                                         GroupWeightLayout::kOutByIn) +
                               b2.index_select(0, slots.experts),
                           slots, p.gather(-1, chosen), x);
  (void)hidden;  // Expert hidden units are per expert; not exposed here.
  return output.view(input.sizes());
}

torch::Tensor GptOssMoeImpl::ForwardDense(const torch::Tensor& x) const {
  const torch::Tensor p = torch::softmax(torch::matmul(x, router.t()), -1);
  const torch::Tensor chosen = std::get<1>(p.topk(options_.top_k, -1));
  const torch::Tensor mask = torch::zeros_like(p).scatter(-1, chosen, 1.0);
  torch::Tensor output = torch::zeros_like(x);
  for (int64_t j = 0; j < options_.n_experts; ++j) {
    output = output + ClampedGlu(x, w1[j], b1[j], w2[j], b2[j], nullptr) *
                          (p * mask).select(1, j).unsqueeze(1);
  }
  return output;
}

int64_t GptOssMoeImpl::ForwardFlopsPerToken() const {
  const auto& o = options_;
  return 2 * o.d_model * o.n_experts +
         o.top_k * (2 * o.d_model * 2 * o.d_ffn + 2 * o.d_ffn * o.d_model);
}

}  // namespace sparse_layers::layers
