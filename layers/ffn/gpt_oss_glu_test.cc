#include "layers/ffn/gpt_oss_glu.h"

#include <torch/torch.h>

#include "gtest/gtest.h"
#include "ops/core/parameter_count.h"

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

}  // namespace
}  // namespace sparse_layers::layers
