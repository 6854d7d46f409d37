#include "analysis/replacement/ffn_ablation.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "layers/ffn/dense_mlp.h"
#include "models/gpt.h"
#include "models/tiny_gpt.h"

namespace sparse_layers::analysis {
namespace {

TEST(FfnAblationCostsTest, IsTheZeroAblatedMinusIntactCrossEntropyPerBlock) {
  layers::GptOptions options = layers::testing::TinyGptOptions(40, 16, 3);
  options.context_length = 12;
  options.ffn = "relu_mlp";
  options.d_ffn = 24;
  torch::manual_seed(0);
  auto model = *layers::GptImpl::Create(options);
  model->eval();
  torch::NoGradGuard no_grad;
  // Block 1's FFN writes nothing, so deleting it costs exactly nothing.
  std::dynamic_pointer_cast<layers::DenseMlpImpl>(model->blocks[1]->ffn)
      ->out->weight.zero_();
  const torch::Tensor tokens = torch::randint(0, 40, {3, 12}, torch::kLong);
  const torch::Tensor targets = torch::randint(0, 40, {3, 12}, torch::kLong);
  const auto ce = [&] {
    return model->CrossEntropy(tokens, targets).item<double>();
  };
  const double intact = ce();
  const FfnAblation ablation = FfnAblationCosts(*model, ce);
  EXPECT_EQ(ablation.intact_cross_entropy, intact);
  const std::vector<double>& costs = ablation.costs;
  ASSERT_EQ(costs.size(), 3u);
  EXPECT_EQ(costs[1], 0.0);
  // Reference: the FFN deleted by zeroing its output projection (bias-free).
  for (int block : {0, 2}) {
    torch::Tensor weight = std::dynamic_pointer_cast<layers::DenseMlpImpl>(
                               model->blocks[block]->ffn)
                               ->out->weight;
    const torch::Tensor kept = weight.clone();
    weight.zero_();
    EXPECT_NEAR(costs[block], ce() - intact, 1e-9);
    EXPECT_GT(std::abs(costs[block]), 1e-4);
    weight.copy_(kept);
  }
  // Every block is restored afterwards.
  EXPECT_EQ(ce(), intact);
}

TEST(ZeroAblatedTest, NamesAHookPointTheModelLacks) {
  torch::manual_seed(0);
  auto model =
      *layers::GptImpl::Create(layers::testing::TinyGptOptions(40, 16, 2));
  const auto measure = [] { return 1.0; };
  const absl::StatusOr<double> missing =
      ZeroAblated(*model, "blocks.7.ffn.hook_out", measure);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(),
            "the model has no hook point blocks.7.ffn.hook_out");
  EXPECT_EQ(ZeroAblated(*model, "blocks.1.attn.hook_out", measure).value(),
            1.0);
  EXPECT_FALSE(model->FindHook("blocks.1.attn.hook_out")->active());
}

}  // namespace
}  // namespace sparse_layers::analysis
