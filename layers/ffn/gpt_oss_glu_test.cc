#include "layers/ffn/gpt_oss_glu.h"

#include <torch/torch.h>

#include "gtest/gtest.h"
#include "ops/core/parameter_count.h"
#include "ops/testing/gradient_check.h"

namespace sparse_layers::layers {
namespace {

TEST(ClampedGluTest, MatchesTheGptOssFormulaIncludingTheClamps) {
  torch::manual_seed(0);
  FeedForwardOptions o;
  o.d_model = 6;
  o.d_ffn = 5;
  ClampedGluImpl glu(o);
  {
    torch::NoGradGuard no_grad;
    glu.w1.mul_(20);  // Large pre-activations exercise both clamps.
    glu.b1.normal_();
  }
  const torch::Tensor x = torch::randn({4, 6});
  const torch::Tensor ab = torch::matmul(x, glu.w1.t()) + glu.b1;
  const torch::Tensor a = torch::minimum(ab.slice(1, 0, 5), torch::tensor(7.0));
  const torch::Tensor b = torch::clamp(ab.slice(1, 5), -7, 7);
  const torch::Tensor h = a / (1 + torch::exp(-1.702 * a)) * (b + 1);
  HookPoint none;
  EXPECT_TRUE(torch::allclose(
      glu.Forward(x, none), torch::matmul(h, glu.w2.t()) + glu.b2, 1e-4, 1e-5));
  EXPECT_TRUE((ab.abs() > 7).any().item<bool>());
  EXPECT_EQ(CountParameters(glu),
            3 * 6 * 5 + 2 * 5 + 6);  // 3 D F + 2 F + D (3.2).
}

TEST(GptOssMoeTest, DispatchEqualsDenseAndCountsFollowTheCode) {
  torch::manual_seed(1);
  FeedForwardOptions o;
  o.d_model = 8;
  o.d_ffn = 8;  // F = D, as in the paper's MoE.
  o.n_experts = 16;
  o.top_k = 2;
  GptOssMoeImpl moe(o);
  const torch::Tensor x = torch::randn({20, 8});
  HookPoint none;
  EXPECT_TRUE(
      torch::allclose(moe.Forward(x, none), moe.ForwardDense(x), 1e-5, 1e-6));
  EXPECT_EQ(CountParameters(moe),
            16 * 8 + 16 * (3 * 8 * 8 + 3 * 8));  // 16 D + 16 (3 D^2 + 3 D).
  // 2 D 16 + 2 * 2 * 2 D D + 2 * 2 D D (the sgatlin authors' flops.py).
  EXPECT_EQ(moe.ForwardFlopsPerToken(),
            2 * 8 * 16 + 2 * 2 * 2 * 8 * 8 + 2 * 2 * 8 * 8);
}

TEST(GptOssMoeTest, DispatchValuesAndGradientsEqualDenseInDouble) {
  torch::manual_seed(2);
  FeedForwardOptions o;
  o.d_model = 8;
  o.d_ffn = 6;
  o.n_experts = 4;
  o.top_k = 2;
  GptOssMoeImpl moe(o);
  moe.to(torch::kDouble);
  {
    torch::NoGradGuard no_grad;
    moe.b1.normal_();  // Each expert's own biases, gathered per sorted row.
    moe.b2.normal_();
  }
  // 600 slots over 4 experts: groups of about 150 rows, cut into pieces.
  const auto options = torch::TensorOptions().dtype(torch::kDouble);
  const torch::Tensor x = torch::randn({300, 8}, options).requires_grad_();
  const torch::Tensor upstream = torch::randn({300, 8}, options);
  const std::vector<torch::Tensor> inputs = {x,      moe.router, moe.w1,
                                             moe.b1, moe.w2,     moe.b2};
  const auto values_and_gradients = [&](const torch::Tensor& y) {
    std::vector<torch::Tensor> all =
        torch::autograd::grad({(y * upstream).sum()}, inputs);
    all.insert(all.begin(), y.detach());
    return all;
  };
  HookPoint none;
  const auto dispatched = values_and_gradients(moe.Forward(x, none));
  const auto dense = values_and_gradients(moe.ForwardDense(x));
  const char* names[] = {"output", "d x",  "d router", "d w1",
                         "d b1",   "d w2", "d b2"};
  for (size_t i = 0; i < dense.size(); ++i) {
    EXPECT_LT(testing::MaxRelativeError(dispatched[i], dense[i]), 1e-12)
        << names[i];
  }
}

}  // namespace
}  // namespace sparse_layers::layers
