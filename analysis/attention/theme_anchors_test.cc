#include "analysis/attention/theme_anchors.h"

#include <torch/torch.h>

#include <cmath>

#include "gtest/gtest.h"
#include "layers/attention/lorsa.h"

namespace sparse_layers::analysis {
namespace {

layers::Lorsa SmallLorsa() {
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
  return lorsa;
}

// Each sum of WindowSums against a loop over queries and keys, at the query
// positions after the first where a head is active: z, the count, the read
// weight A(t, s) |v(s)| over keys s >= 1, its distance-weighted sum and the
// sink's A(t, 0) |v(0)|.
TEST(WindowSumsTest, MatchesTheLoopOverQueriesAndKeys) {
  layers::Lorsa lorsa = SmallLorsa();
  torch::NoGradGuard no_grad;
  const layers::LorsaOutput out = lorsa->Run(torch::randn({2, 9, 16}), 3);
  const HeadWindowSums sums = WindowSums(*lorsa, out);
  ASSERT_EQ(sums.z.sizes(), (std::vector<int64_t>{2, 8}));
  int64_t seen = 0;
  for (int64_t b = 0; b < 2; ++b) {
    for (int64_t h = 0; h < 8; ++h) {
      double z = 0, active = 0, read = 0, distance = 0, sink = 0;
      for (int64_t t = 1; t < 9; ++t) {
        const double value = out.activations[b][t][h].item<double>();
        if (value <= 0) continue;
        z += value;
        active += 1;
        const auto weight = [&](int64_t s) {
          return out.pattern[b][lorsa->GroupOf(h)][t][s].item<double>() *
                 std::abs(out.values[b][s][h].item<double>());
        };
        sink += weight(0);
        for (int64_t s = 1; s <= t; ++s) {
          read += weight(s);
          distance += weight(s) * static_cast<double>(t - s);
        }
      }
      seen += active > 0;
      EXPECT_NEAR(sums.z[b][h].item<double>(), z, 1e-5);
      EXPECT_EQ(sums.active[b][h].item<double>(), active);
      EXPECT_NEAR(sums.read[b][h].item<double>(), read, 1e-5);
      EXPECT_NEAR(sums.distance[b][h].item<double>(), distance, 1e-4);
      EXPECT_NEAR(sums.sink[b][h].item<double>(), sink, 1e-5);
    }
  }
  EXPECT_GT(seen, 4);
}

// With every key kept, LocalZ is the head's activation; with one key, its own
// value where it is active.
TEST(LocalZTest, AllKeysGiveTheActivationOneKeyTheOwnValue) {
  layers::Lorsa lorsa = SmallLorsa();
  torch::NoGradGuard no_grad;
  const layers::LorsaOutput out = lorsa->Run(torch::randn({2, 9, 16}), 3);
  for (int64_t h = 0; h < 8; ++h) {
    const torch::Tensor activation = out.activations.select(-1, h);
    EXPECT_TRUE(
        torch::allclose(LocalZ(*lorsa, out, h, 9), activation, 1e-5, 1e-5))
        << h;
    const torch::Tensor own =
        torch::relu(out.values.select(-1, h)) * (activation > 0);
    EXPECT_TRUE(torch::allclose(LocalZ(*lorsa, out, h, 1), own, 1e-5, 1e-5))
        << h;
  }
}

// Four windows of 10 query positions: source 0 then 1 on half 0, the same on
// half 1. Head 0 fires on source 0 alone; head 1 on both nearly alike; head 2
// prefers source 1 on half 0 and source 0 on half 1; head 3 never fires.
TEST(ScoreThemesTest, SourceChosenOnHalfZeroEveryStatisticOnBothHalves) {
  const torch::Tensor source = torch::tensor({0, 1, 0, 1}, torch::kLong);
  const torch::Tensor half = torch::tensor({0, 0, 1, 1}, torch::kLong);
  const auto columns = [](std::vector<std::vector<double>> by_head) {
    return torch::tensor(
               {by_head[0][0], by_head[1][0], by_head[2][0], by_head[3][0],
                by_head[0][1], by_head[1][1], by_head[2][1], by_head[3][1],
                by_head[0][2], by_head[1][2], by_head[2][2], by_head[3][2],
                by_head[0][3], by_head[1][3], by_head[2][3], by_head[3][3]},
               torch::kDouble)
        .view({4, 4});
  };
  HeadWindowSums sums;
  sums.z = columns({{4, 0, 6, 0}, {2, 1.9, 1, 1}, {1, 3, 3, 1}, {0, 0, 0, 0}});
  sums.active =
      columns({{2, 0, 3, 0}, {1, 1, 1, 1}, {1, 3, 2, 1}, {0, 0, 0, 0}});
  sums.read = columns({{4, 0, 6, 0}, {1, 1, 1, 1}, {1, 3, 3, 1}, {0, 0, 0, 0}});
  sums.distance =
      columns({{8, 0, 30, 0}, {1, 1, 1, 1}, {1, 3, 3, 1}, {0, 0, 0, 0}});
  sums.sink = columns({{4, 0, 2, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}});
  const HeadThemes themes = ScoreThemes(sums, source, half, 2, 10);
  EXPECT_TRUE(
      torch::equal(themes.domain, torch::tensor({0, 0, 1, -1}, torch::kLong)));
  const auto at = [](const torch::Tensor& x, int64_t half, int64_t head) {
    return x[half][head].item<double>();
  };
  EXPECT_DOUBLE_EQ(at(themes.selectivity, 0, 0), 1.0);
  EXPECT_DOUBLE_EQ(at(themes.selectivity, 1, 0), 1.0);
  EXPECT_NEAR(at(themes.selectivity, 0, 1), 0.2 / 0.39, 1e-12);
  EXPECT_DOUBLE_EQ(at(themes.selectivity, 0, 2), 0.75);
  EXPECT_DOUBLE_EQ(at(themes.selectivity, 1, 2), 0.25);
  EXPECT_DOUBLE_EQ(at(themes.persistence, 0, 0), 0.2);
  EXPECT_DOUBLE_EQ(at(themes.persistence, 1, 0), 0.3);
  EXPECT_DOUBLE_EQ(at(themes.persistence, 1, 2), 0.1);
  EXPECT_DOUBLE_EQ(at(themes.reach, 0, 0), 2.0);
  EXPECT_DOUBLE_EQ(at(themes.reach, 1, 0), 5.0);
  EXPECT_DOUBLE_EQ(at(themes.sink_share, 0, 0), 0.5);
  EXPECT_DOUBLE_EQ(at(themes.sink_share, 1, 0), 0.25);
  EXPECT_DOUBLE_EQ(at(themes.active, 1, 0), 3.0);
  EXPECT_DOUBLE_EQ(at(themes.selectivity, 0, 3), 0.0);

  // The floors read half 0: head 0 meets each at its edge; head 1 has too few
  // active tokens, head 2 too short a reach, head 3 no source.
  ThemeAnchorOptions options;
  options.min_active = 2;
  options.min_persistence = 0.2;
  options.min_reach = 2;
  options.max_sink_share = 0.5;
  EXPECT_TRUE(torch::equal(Candidates(themes, options),
                           torch::tensor({true, false, false, false})));
  options.max_sink_share = 0.4;
  EXPECT_FALSE(Candidates(themes, options)[0].item<bool>());

  // Means per token: a source with twice the windows weighs the same.
  const torch::Tensor more_source = torch::tensor({0, 1, 0, 1, 1});
  const torch::Tensor more_half = torch::tensor({0, 0, 1, 1, 1});
  const auto again = [](const torch::Tensor& x) {
    return torch::cat({x, x[3].unsqueeze(0)});
  };
  HeadWindowSums more{again(sums.z), again(sums.active), again(sums.read),
                      again(sums.distance), again(sums.sink)};
  EXPECT_DOUBLE_EQ(ScoreThemes(more, more_source, more_half, 2, 10)
                       .selectivity[1][1]
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
