#include "analysis/replacement/expert_tokens.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace sparse_layers::analysis {
namespace {

TEST(UnitCoefficientsTest, IsTheUnitsValueWhereItIsAmongTheK) {
  // Three tokens, K = 2: unit 5 is kept on rows 0 and 2.
  const torch::Tensor values =
      torch::tensor({0.5, 0.25, 2.0, 1.0, 0.0, 3.0}).view({3, 2});
  const torch::Tensor indices =
      torch::tensor({5, 1, 2, 3, 7, 5}, torch::kLong).view({3, 2});
  const torch::Tensor c = UnitCoefficients(values, indices, 5);
  EXPECT_TRUE(c.equal(torch::tensor({0.5, 0.0, 3.0}))) << c;
  EXPECT_TRUE(UnitCoefficients(values, indices, 4).equal(torch::zeros({3})));
}

TEST(MostCommonTokenTest, ShareOfFiringsOnTheModalToken) {
  const torch::Tensor tokens = torch::tensor({7, 7, 3, 7, 9}, torch::kLong);
  // Fires on tokens 7, 3, 7 (the zero and negative codes are no firing).
  const torch::Tensor c = torch::tensor({1.0, 0.0, 2.0, 0.5, -1.0});
  const TokenSpecificity top = MostCommonToken(c, tokens);
  EXPECT_EQ(top.token, 7);
  EXPECT_DOUBLE_EQ(top.share, 2.0 / 3);
  const TokenSpecificity never = MostCommonToken(torch::zeros({5}), tokens);
  EXPECT_EQ(never.token, -1);
  EXPECT_EQ(never.share, 0);
}

}  // namespace
}  // namespace sparse_layers::analysis
