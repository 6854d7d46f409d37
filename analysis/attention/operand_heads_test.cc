#include "analysis/attention/operand_heads.h"

#include <torch/torch.h>

#include "gtest/gtest.h"

namespace sparse_layers::analysis {
namespace {

TEST(OperandVarianceSharesTest, AnAdditiveGridSplitsItsVarianceByOperand) {
  // z = f(a) + g(b): Var f = 2, Var g = 0.5 over the grid (orthogonal), so
  // the shares are 0.8 and 0.2 exactly.
  const torch::Tensor f = torch::tensor({-2.0, 0.0, 2.0, 0.0}, torch::kDouble);
  const torch::Tensor g = torch::tensor({1.0, -1.0, 0.0, 0.0}, torch::kDouble);
  const torch::Tensor z = f.unsqueeze(1) + g.unsqueeze(0);
  const OperandShares shares = OperandVarianceShares(z);
  EXPECT_NEAR(shares.op1, 0.8, 1e-12);
  EXPECT_NEAR(shares.op2, 0.2, 1e-12);
  // An interaction alone (a checkerboard) is explained by neither mean.
  const torch::Tensor sign = torch::tensor({1.0, -1.0, 1.0, -1.0});
  const OperandShares checker =
      OperandVarianceShares(sign.unsqueeze(1) * sign.unsqueeze(0));
  EXPECT_NEAR(checker.op1, 0.0, 1e-12);
  EXPECT_NEAR(checker.op2, 0.0, 1e-12);
  EXPECT_EQ(OperandVarianceShares(torch::ones({3, 3})).op1, 0.0);  // Constant.
}

TEST(MostSpecificHeadsTest, EachOperandGetsItsOwnHeadAndSilentHeadsAreSkipped) {
  torch::manual_seed(0);
  const int64_t n = 20;
  const torch::Tensor a = torch::arange(n, torch::kFloat).view({n, 1, 1});
  const torch::Tensor b = torch::arange(n, torch::kFloat).view({1, n, 1});
  // Head 0: a range of operand 1 ("op1 in 5-9"); head 1: op2 % 3 == 0;
  // head 2: noise; head 3: the strongest op1 signal but active on 1 cell.
  const torch::Tensor head0 =
      ((a >= 5) & (a <= 9)).to(torch::kFloat) + 0.01 * torch::rand({n, n, 1});
  const torch::Tensor head1 =
      (torch::remainder(b, 3) == 0).to(torch::kFloat).expand({n, n, 1}) +
      0.01 * torch::rand({n, n, 1});
  const torch::Tensor head2 = torch::rand({n, n, 1});
  torch::Tensor head3 = torch::zeros({n, n, 1});
  head3[3][0][0] = 100;
  const torch::Tensor z = torch::cat({head0, head1, head2, head3}, 2);
  const auto heads = MostSpecificHeads(z, 0.05);
  EXPECT_EQ(heads[0].head, 0);
  EXPECT_GT(heads[0].own, 0.99);
  EXPECT_LT(heads[0].other, 0.01);
  EXPECT_EQ(heads[1].head, 1);
  EXPECT_GT(heads[1].specificity(), 0.98);
  // Shuffling the cells leaves only what picking the best of 4 heads finds.
  const auto shuffled = ShuffledSpecificity(z, 0.05, 7);
  EXPECT_LT(shuffled[0], 0.2);
  EXPECT_LT(shuffled[1], 0.2);
  // No head active on 5% of the cells: none is named.
  EXPECT_EQ(MostSpecificHeads(head3, 0.05)[0].head, -1);
}

}  // namespace
}  // namespace sparse_layers::analysis
