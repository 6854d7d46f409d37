#include "analysis/expert_geometry/tsne.h"

#include <cmath>

#include "analysis/expert_geometry/expert_encoders.h"
#include "gtest/gtest.h"

namespace sparse_layers::analysis {
namespace {

// Three tight clusters far apart in R^10, 40 points each; labels 0, 1, 2.
std::pair<torch::Tensor, torch::Tensor> ThreeClusters() {
  torch::manual_seed(3);
  const torch::Tensor centres = torch::randn({3, 10}, torch::kFloat64) * 10;
  const torch::Tensor labels =
      torch::arange(3, torch::kLong).repeat_interleave(40);
  return {centres.index_select(0, labels) +
              torch::randn({120, 10}, torch::kFloat64),
          labels};
}

TEST(TsneTest, AffinityRowsHaveThePerplexityAsEntropy) {
  torch::manual_seed(1);
  const torch::Tensor x = torch::randn({60, 5}, torch::kFloat64);
  const torch::Tensor d2 = torch::cdist(x, x).pow(2);
  for (const double perplexity : {5.0, 20.0}) {
    const torch::Tensor p = ConditionalAffinities(d2, perplexity);
    EXPECT_NEAR((p.sum(1) - 1).abs().max().item<double>(), 0, 1e-12);
    EXPECT_EQ(p.diagonal().abs().max().item<double>(), 0);
    // Shannon entropy of each row, in nats, is log(perplexity).
    const torch::Tensor entropy = -(p * torch::log(p.clamp_min(1e-300))).sum(1);
    EXPECT_NEAR((entropy - std::log(perplexity)).abs().max().item<double>(), 0,
                1e-6)
        << "perplexity " << perplexity;
  }
}

TEST(TsneTest, AffinitiesFollowDistance) {
  // One row: neighbours at squared distances 1, 2 and 4 get decreasing mass.
  const torch::Tensor d2 =
      torch::tensor({0.0, 1.0, 2.0, 4.0, 1.0, 0.0, 1.0, 1.0, 2.0, 1.0, 0.0, 1.0,
                     4.0, 1.0, 1.0, 0.0},
                    torch::kFloat64)
          .view({4, 4});
  const torch::Tensor p = ConditionalAffinities(d2, 2.0);
  EXPECT_GT(p[0][1].item<double>(), p[0][2].item<double>());
  EXPECT_GT(p[0][2].item<double>(), p[0][3].item<double>());
  // p_{j|0} proportional to exp(-beta d2): the log-ratios are linear in d2.
  const double r12 = std::log(p[0][1].item<double>() / p[0][2].item<double>());
  const double r13 = std::log(p[0][1].item<double>() / p[0][3].item<double>());
  EXPECT_NEAR(r13, 3 * r12, 1e-9);
}

TEST(TsneTest, SeparatedClustersStaySeparatedInTheMap) {
  const auto [points, labels] = ThreeClusters();
  TsneOptions options;
  options.perplexity = 15;
  options.iterations = 500;
  auto map = Tsne(points, options);
  ASSERT_TRUE(map.ok()) << map.status();
  ASSERT_EQ(map->embedding.sizes(), (std::vector<int64_t>{120, 2}));
  EXPECT_TRUE(torch::isfinite(map->embedding).all().item<bool>());
  EXPECT_EQ(SameLabelNeighbourShare(map->embedding, labels, 5), 1.0);
  // Within-cluster spread well below the distance between cluster means.
  const torch::Tensor means =
      torch::stack({map->embedding.slice(0, 0, 40).mean(0),
                    map->embedding.slice(0, 40, 80).mean(0),
                    map->embedding.slice(0, 80, 120).mean(0)});
  const double spread = (map->embedding.slice(0, 0, 40) - means[0])
                            .norm(2, 1)
                            .mean()
                            .item<double>();
  EXPECT_GT(torch::cdist(means, means).max().item<double>(), 4 * spread);
  EXPECT_GT(map->kl_divergence, 0);
  EXPECT_LT(map->kl_divergence, 1.0);
}

TEST(TsneTest, TheSameSeedDrawsTheSameMap) {
  const auto [points, labels] = ThreeClusters();
  TsneOptions options;
  options.perplexity = 10;
  options.iterations = 100;
  auto a = Tsne(points, options);
  auto b = Tsne(points, options);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_TRUE(torch::equal(a->embedding, b->embedding));
}

TEST(TsneTest, RefusesTooFewPointsAndABadPerplexity) {
  TsneOptions options;
  options.perplexity = 30;
  EXPECT_FALSE(Tsne(torch::randn({2, 4}), options).ok());
  EXPECT_FALSE(Tsne(torch::randn({20, 4}), options).ok());  // 30 >= n - 1.
  options.perplexity = 5;
  torch::Tensor bad = torch::randn({20, 4});
  bad[3][1] = std::nan("");
  EXPECT_FALSE(Tsne(bad, options).ok());
  EXPECT_TRUE(Tsne(torch::randn({20, 4}), options).ok());
}

}  // namespace
}  // namespace sparse_layers::analysis
