#include "analysis/activation_flow/hidden_dims.h"

#include <torch/torch.h>

#include "gtest/gtest.h"

namespace sparse_layers::analysis {
namespace {

TEST(HiddenDimsTest, TopShareSparsityAndEnergyByHand) {
  // m = (4, 1, 1, 0) in two orders: sum 6, top 1 dim 4/6, top 2 dims 5/6.
  const torch::Tensor x =
      torch::tensor({{2.0, 1.0, -1.0, 0.0}, {0.0, -1.0, 2.0, 1.0}});
  const torch::Tensor m = Magnitudes(x);
  EXPECT_DOUBLE_EQ(m[0][0].item<double>(), 4.0);
  const std::vector<double> share = TopShare(m, {0.25, 0.5, 1.0});
  EXPECT_NEAR(share[0], 4.0 / 6.0, 1e-12);
  EXPECT_NEAR(share[1], 5.0 / 6.0, 1e-12);
  EXPECT_NEAR(share[2], 1.0, 1e-12);
  // mean m = 1.5: below 0.75 is only the 0; below 1.5 are 1, 1 and 0.
  EXPECT_DOUBLE_EQ(RelativeSparsity(m, 0.5), 0.25);
  EXPECT_DOUBLE_EQ(RelativeSparsity(m, 1.0), 0.75);
  EXPECT_DOUBLE_EQ(MeanEnergy(m), 6.0);
  EXPECT_DOUBLE_EQ(MedianMagnitude(m), 1.0);
}

TEST(HiddenDimsTest, HighDimsKeepsTheTopQuantile) {
  // q = 0.5 of 4 dims keeps the top 2 (dims 0 and 2), q = 0.75 the top 1.
  const torch::Tensor m = torch::tensor({4.0, 1.0, 2.0, 0.0}).view({1, 1, 4});
  EXPECT_TRUE(torch::equal(HighDims(m, 0.5).flatten(),
                           torch::tensor({true, false, true, false})));
  EXPECT_TRUE(torch::equal(HighDims(m, 0.75).flatten(),
                           torch::tensor({true, false, false, false})));
}

TEST(HiddenDimsTest, IndependentNullMatchesTheSpecsArithmetic) {
  // Chance overlaps for MoHD's Fig. 3 counts (arXiv:2412.05644 Sec. 3.3):
  // 4096 * 0.8^2 = 2621 (2 tokens), 4096 * 0.8^9 = 550.
  EXPECT_NEAR(IndependentSharing(4096, 0.2, 2), 2621.44, 1e-9);
  EXPECT_NEAR(IndependentSharing(4096, 0.2, 9), 549.76, 0.01);
}

// Every token of a sequence has the same 30 of 100 dims large (a random set
// per sequence): consecutive tokens share exactly those 30, tokens from
// different sequences share what random 30-sets do, 100 * 0.3^w.
TEST(HiddenDimsTest, PlantedSequenceDimsAreSharedAndTheShuffledNullIsNot) {
  torch::manual_seed(3);
  const int64_t sequences = 64, tokens = 32, d = 100, planted = 30;
  torch::Tensor x = 0.1 * torch::rand({sequences, tokens, d});
  for (int64_t s = 0; s < sequences; ++s) {
    const torch::Tensor dims = torch::randperm(d).slice(0, 0, planted);
    x[s].index_put_({torch::indexing::Slice(), dims},
                    1.0 + torch::rand({tokens, planted}));
  }
  const torch::Tensor high = HighDims(Magnitudes(x), 0.7);
  EXPECT_EQ(high.sum().item<int64_t>(), sequences * tokens * planted);
  for (int64_t w : {2, 5, 9}) {
    EXPECT_DOUBLE_EQ(ConsecutiveSharing(high, w), planted);
    EXPECT_NEAR(ShuffledSharing(high, w, 4000, 11),
                IndependentSharing(d, 0.7, w), 0.3)
        << "w = " << w;
  }
  const SharedUnique consecutive = ConsecutiveSharedUnique(high, 5);
  EXPECT_DOUBLE_EQ(consecutive.in_all, planted);
  EXPECT_DOUBLE_EQ(consecutive.unique_per_token, 0.0);
  // Independent 30% sets over 5 tokens: 100 * 5 * 0.3 * 0.7^4 / 5 = 7.2 dims
  // unique per token, 100 * 0.3^5 = 0.24 in all.
  const SharedUnique shuffled = ShuffledSharedUnique(high, 5, 4000, 12);
  EXPECT_NEAR(shuffled.in_all, 0.243, 0.1);
  EXPECT_NEAR(shuffled.unique_per_token, 7.203, 0.3);
}

}  // namespace
}  // namespace sparse_layers::analysis
