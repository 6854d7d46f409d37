#include "analysis/attention/theme_anchors.h"

#include <torch/torch.h>

#include "gtest/gtest.h"
#include "layers/attention/lorsa.h"

namespace sparse_layers::analysis {
namespace {

// Each sum of WindowSums against a loop over queries and keys: z and active
// over positions after the first, and sum_s A(t, s) v(s) (t - s) at the
// positions where a head is selected.
TEST(WindowSumsTest, MatchesTheLoopOverQueriesAndKeys) {
  layers::LorsaOptions options;
  options.d_model = 16;
  options.qk_heads = 2;
  options.qk_dim = 4;
  options.ov_heads = 8;
  options.top_k = 3;
  options.context_length = 10;
  torch::manual_seed(5);
  layers::Lorsa lorsa(options);
  lorsa->eval();
  torch::NoGradGuard no_grad;
  const layers::LorsaOutput out = lorsa->Run(torch::randn({2, 9, 16}), 3);
  const HeadWindowSums sums = WindowSums(*lorsa, out);
  ASSERT_EQ(sums.z.sizes(), (std::vector<int64_t>{2, 8}));
  for (int64_t b = 0; b < 2; ++b) {
    for (int64_t h = 0; h < 8; ++h) {
      double z = 0, active = 0, distance = 0;
      for (int64_t t = 1; t < 9; ++t) {
        const double value = out.activations[b][t][h].item<double>();
        if (value == 0) continue;
        z += value;
        active += 1;
        double mixed = 0;
        for (int64_t s = 0; s <= t; ++s) {
          const double read =
              out.pattern[b][lorsa->GroupOf(h)][t][s].item<double>() *
              out.values[b][s][h].item<double>();
          mixed += read;
          distance += read * static_cast<double>(t - s);
        }
        EXPECT_NEAR(mixed, value, 1e-5);  // z is the mixed value.
      }
      EXPECT_NEAR(sums.z[b][h].item<double>(), z, 1e-5);
      EXPECT_EQ(sums.active[b][h].item<double>(), active);
      EXPECT_NEAR(sums.distance[b][h].item<double>(), distance, 1e-4);
    }
  }
}

// Four windows of 10 scored positions: source 0 then 1 in half 0, the same in
// half 1. Head 0 fires on source 0 alone; head 1 on both alike; head 2
// prefers source 1 on half 0 and source 0 on half 1 (its choice is made on
// half 0, its selectivity read on half 1).
TEST(ScoreThemesTest, ChoiceOnOneHalfSharesAndFloorsOnTheOther) {
  const torch::Tensor source = torch::tensor({0, 1, 0, 1}, torch::kLong);
  const torch::Tensor half = torch::tensor({0, 0, 1, 1}, torch::kLong);
  HeadWindowSums sums;
  sums.z = torch::tensor(
      {{4.0, 2.0, 1.0}, {0.0, 2.0, 3.0}, {6.0, 1.0, 3.0}, {0.0, 1.0, 1.0}},
      torch::kDouble);
  sums.active = torch::tensor(
      {{2.0, 1.0, 1.0}, {0.0, 1.0, 3.0}, {3.0, 1.0, 2.0}, {0.0, 1.0, 1.0}},
      torch::kDouble);
  sums.distance = torch::tensor(
      {{8.0, 2.0, 1.0}, {0.0, 2.0, 3.0}, {30.0, 1.0, 6.0}, {0.0, 1.0, 1.0}},
      torch::kDouble);
  const HeadThemes themes = ScoreThemes(sums, source, half, 2, 10);
  EXPECT_EQ(themes.domain[0].item<int64_t>(), 0);
  EXPECT_EQ(themes.domain[2].item<int64_t>(), 1);
  EXPECT_DOUBLE_EQ(themes.selectivity[0].item<double>(), 1.0);
  EXPECT_DOUBLE_EQ(themes.selectivity[1].item<double>(), 0.5);
  EXPECT_DOUBLE_EQ(themes.selectivity[2].item<double>(), 0.25);
  // Half 1 of the chosen source: 3 of 10 tokens, distance 30 over z 6.
  EXPECT_DOUBLE_EQ(themes.persistence[0].item<double>(), 0.3);
  EXPECT_DOUBLE_EQ(themes.reach[0].item<double>(), 5.0);
  EXPECT_DOUBLE_EQ(themes.active[0].item<double>(), 3.0);
  EXPECT_DOUBLE_EQ(themes.persistence[2].item<double>(), 0.1);
  EXPECT_DOUBLE_EQ(themes.reach[2].item<double>(), 1.0);
  // Means per token: a source with twice the windows weighs the same.
  const torch::Tensor doubled_source =
      torch::tensor({0, 1, 0, 1, 1}, torch::kLong);
  const torch::Tensor doubled_half =
      torch::tensor({0, 0, 1, 1, 1}, torch::kLong);
  HeadWindowSums doubled{
      torch::cat({sums.z, sums.z[3].unsqueeze(0)}),
      torch::cat({sums.active, sums.active[3].unsqueeze(0)}),
      torch::cat({sums.distance, sums.distance[3].unsqueeze(0)})};
  EXPECT_DOUBLE_EQ(ScoreThemes(doubled, doubled_source, doubled_half, 2, 10)
                       .selectivity[1]
                       .item<double>(),
                   0.5);
}

TEST(PermuteWithinHalvesTest, EachHalfKeepsItsLabelsAndTheSeedFixesTheOrder) {
  const torch::Tensor labels =
      torch::tensor({0, 0, 0, 1, 1, 2, 0, 1, 1, 1, 2, 2}, torch::kLong);
  const torch::Tensor half =
      torch::tensor({0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1}, torch::kLong);
  const torch::Tensor permuted = PermuteWithinHalves(labels, half, 7);
  for (int64_t h = 0; h < 2; ++h) {
    const torch::Tensor mine = half == h;
    EXPECT_TRUE(torch::equal(std::get<0>(permuted.index({mine}).sort()),
                             std::get<0>(labels.index({mine}).sort())));
  }
  EXPECT_FALSE(torch::equal(permuted, labels));
  EXPECT_TRUE(torch::equal(PermuteWithinHalves(labels, half, 7), permuted));
}

}  // namespace
}  // namespace sparse_layers::analysis
