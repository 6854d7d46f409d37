#include "analysis/attention/head_analysis.h"

#include <torch/torch.h>

#include "gtest/gtest.h"

namespace sparse_layers::analysis {
namespace {

// Sequences: 1 start token, then a span of n = 5 repeated twice (T = 11).
// Head 0 is a planted induction head (query i attends to i - n + 1), head 1 a
// previous-token head, head 2 uniform causal attention.
TEST(HeadAnalysisTest, PlantedInductionAndPreviousTokenHeadsScoreOne) {
  const int64_t t = 11, start = 1, period = 5;
  torch::Tensor pattern = torch::zeros({1, 3, t, t});
  for (int64_t i = 0; i < t; ++i) {
    const int64_t key = i >= start + period ? i - period + 1 : i;
    pattern[0][0][i][key] = 1.0;
    pattern[0][1][i][i > 0 ? i - 1 : 0] = 1.0;
    for (int64_t j = 0; j <= i; ++j) pattern[0][2][i][j] = 1.0 / (i + 1);
  }
  const torch::Tensor induction = InductionScores(pattern, start, period);
  EXPECT_DOUBLE_EQ(induction[0].item<double>(), 1.0);
  EXPECT_DOUBLE_EQ(induction[1].item<double>(), 0.0);
  // Uniform head: mean of 1 / (i + 1) over i = 6..10.
  const double uniform =
      (1.0 / 7 + 1.0 / 8 + 1.0 / 9 + 1.0 / 10 + 1.0 / 11) / 5;
  EXPECT_NEAR(induction[2].item<double>(), uniform, 1e-6);
  EXPECT_LT(induction[2].item<double>(), 0.15);
  const torch::Tensor previous = PreviousTokenScores(pattern);
  EXPECT_DOUBLE_EQ(previous[1].item<double>(), 1.0);
  EXPECT_LT(previous[0].item<double>(), 0.5);
}

// Two QK groups of 2 heads: group 0 a planted induction pattern, group 1 a
// previous-token pattern. Head 1 is never active; head 3 is active only at odd
// positions and its value vanishes at even ones, so its z there comes from
// the token itself, not the previous one.
TEST(HeadAnalysisTest, LorsaZPatternScoresFollowThePlantedPatterns) {
  const int64_t t = 11, start = 1, period = 5;
  torch::Tensor pattern = torch::zeros({1, 2, t, t});
  for (int64_t i = 0; i < t; ++i) {
    pattern[0][0][i][i >= start + period ? i - period + 1 : i] = 1.0;
    if (i > 0) {
      pattern[0][1][i][i - 1] = 0.5;
      pattern[0][1][i][i] = 0.5;
    } else {
      pattern[0][1][0][0] = 1.0;
    }
  }
  torch::Tensor values = torch::ones({1, t, 4});
  torch::Tensor activations = torch::ones({1, t, 4});
  activations.select(2, 1).zero_();
  for (int64_t j = 0; j < t; j += 2) {
    values[0][j][3] = 0.0;
    activations[0][j][3] = 0.0;
  }
  const ZPatternScores scores =
      LorsaZPatternScores(pattern, values, activations, start, period);
  EXPECT_DOUBLE_EQ(scores.induction[0].item<double>(), 1.0);
  EXPECT_EQ(scores.induction_count[0].item<int64_t>(), 5);
  EXPECT_EQ(scores.induction_count[1].item<int64_t>(), 0);
  EXPECT_DOUBLE_EQ(scores.induction[1].item<double>(), 0.0);
  // Head 2: half of each z from i - 1, half from i.
  EXPECT_DOUBLE_EQ(scores.previous_token[2].item<double>(), 0.5);
  EXPECT_DOUBLE_EQ(scores.induction[2].item<double>(), 0.0);
  EXPECT_DOUBLE_EQ(scores.previous_token[3].item<double>(), 0.0);
  EXPECT_EQ(scores.previous_token_count[3].item<int64_t>(), 5);
}

TEST(HeadAnalysisTest, HeadOutputsSumToTheLayerOutput) {
  layers::AttentionOptions options;
  options.d_model = 16;
  options.n_heads = 4;
  options.context_length = 8;
  options.rotary = true;
  torch::manual_seed(2);
  options.hook_prefix = "blocks.0.attn.";
  layers::CausalSelfAttentionImpl attention(options);
  const torch::Tensor x = torch::randn({2, 8, 16});
  torch::NoGradGuard no_grad;
  const HeadOutputs heads = MhsaHeadOutputs(attention, x);
  EXPECT_EQ(heads.outputs.sizes(), (std::vector<int64_t>{2, 8, 4, 16}));
  EXPECT_TRUE(
      torch::allclose(heads.outputs.sum(2), attention.forward(x), 1e-5, 1e-6));
  EXPECT_FALSE(attention.hook_pattern.active());
}

// Lorsa head outputs built from known mixtures of MHSA head outputs: head 0
// outputs MHSA head 0's output, head 1 the sum of heads 1 and 2 where head 2
// is half of head 1, head 2 is never active. The projection recovers
// contributions (1, 0, 0) and (0, 2/3, 1/3), and 1 and 2 effective heads.
TEST(HeadAnalysisTest, ObliqueProjectionRecoversPlantedMixtures) {
  torch::manual_seed(4);
  const int64_t n = 200, d = 12;
  const torch::Tensor o0 = torch::randn({n, d}, torch::kDouble);
  const torch::Tensor o1 = torch::randn({n, d}, torch::kDouble);
  const torch::Tensor mhsa = torch::stack({o0, o1, 0.5 * o1}, 1);
  const torch::Tensor basis = torch::stack({o0, 1.5 * o1}, 1);
  const torch::Tensor active = torch::tensor({0L, 1L}).repeat({n, 1});
  HeadAttribution attribution(3, 3);
  attribution.Add(basis, active, mhsa);
  EXPECT_EQ(attribution.ActiveCounts()[0].item<int64_t>(), n);
  EXPECT_EQ(attribution.ActiveCounts()[2].item<int64_t>(), 0);
  const torch::Tensor expected =
      torch::tensor({{1.0, 0.0, 0.0}, {0.0, 2.0 / 3, 1.0 / 3}, {0.0, 0.0, 0.0}},
                    torch::kDouble);
  EXPECT_TRUE(
      torch::allclose(attribution.Contributions(), expected, 1e-9, 1e-9))
      << attribution.Contributions();
  // Each active row's raw coefficients sum to one: the heads add up.
  EXPECT_NEAR(attribution.MeanCoefficients()[1].sum().item<double>(), 1.0,
              1e-9);
  EXPECT_TRUE(torch::equal(EffectiveHeadCounts(attribution.Contributions()),
                           torch::tensor({1L, 2L, 0L})));
  const torch::Tensor counts = EffectiveHeadCounts(
      torch::tensor({{0.5, 0.5, 0.0}, {0.6, 0.25, 0.15}}, torch::kDouble));
  EXPECT_TRUE(torch::equal(counts, torch::tensor({2L, 3L})));
}

// A direction along token 2's unembedding row promotes token 2 most; under
// LayerNorm its mean is removed first and the gain weights each coordinate.
TEST(DirectLogitEffectTest, UnembeddingThroughTheNormGainByHand) {
  const torch::Tensor unembedding =
      torch::tensor(
          {1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0},
          torch::kDouble)
          .view({4, 3});
  const torch::Tensor gain = torch::tensor({1.0, 2.0, 3.0}, torch::kDouble);
  const torch::Tensor direction = torch::tensor({0.0, 0.0, 1.0});
  // RMSNorm: written = (0, 0, 3); logits (0, 0, 3, 3), mean 1.5.
  const torch::Tensor rms = DirectLogitEffect(direction, unembedding, gain,
                                              /*layer_norm=*/false);
  EXPECT_TRUE(torch::allclose(
      rms, torch::tensor({-1.5, -1.5, 1.5, 1.5}, torch::kDouble)));
  // LayerNorm: centred (-1/3, -1/3, 2/3), written (-1/3, -2/3, 2); logits
  // (-1/3, -2/3, 2, 1), mean 0.5.
  const torch::Tensor ln = DirectLogitEffect(direction, unembedding, gain,
                                             /*layer_norm=*/true);
  EXPECT_TRUE(torch::allclose(
      ln, torch::tensor({-1.0 / 3 - 0.5, -2.0 / 3 - 0.5, 1.5, 0.5},
                        torch::kDouble)));
  EXPECT_EQ(ln.argmax().item<int64_t>(), 2);
}

TEST(CompareErrorsTest, CosinesAndNormCorrelationByHand) {
  // Rows 0-1 point along x, rows 2-3 along y; b equals a, scaled per row.
  const torch::Tensor a =
      torch::tensor({1.0, 0.0, 2.0, 0.0, 0.0, 1.0, 0.0, 3.0}).view({4, 2});
  const torch::Tensor b =
      torch::tensor({2.0, 0.0, 4.0, 0.0, 0.0, 2.0, 0.0, 6.0}).view({4, 2});
  const ErrorAgreement same = CompareErrors(a, b);
  EXPECT_EQ(same.tokens, 4);
  EXPECT_NEAR(same.cosine, 1.0, 1e-12);
  // Rolled by 2, every x row meets a y row: orthogonal.
  EXPECT_NEAR(same.cosine_shuffled, 0.0, 1e-12);
  EXPECT_NEAR(same.norm_correlation, 1.0, 1e-12);
  const ErrorAgreement opposite = CompareErrors(a, -b);
  EXPECT_NEAR(opposite.cosine, -1.0, 1e-12);
  // Norms are the same whatever the sign.
  EXPECT_NEAR(opposite.norm_correlation, 1.0, 1e-12);
}

TEST(CorrelationTest, PearsonAndSpearmanMatchHandComputedValues) {
  const auto vec = [](std::vector<double> v) {
    return torch::tensor(v, torch::kDouble);
  };
  // dx = (-1, 0, 1), dy = (-7, -1, 8) / 3: r = 5 / sqrt(2 * 114 / 9).
  EXPECT_NEAR(PearsonCorrelation(vec({1, 2, 3}), vec({2, 4, 7})),
              5 / std::sqrt(2 * 114.0 / 9), 1e-12);
  EXPECT_EQ(PearsonCorrelation(vec({1, 1, 1}), vec({2, 4, 7})), 0);
  // Ties share rank 2.5: ranks (1, 2.5, 2.5, 4) against (1, 2, 3, 4).
  EXPECT_NEAR(SpearmanCorrelation(vec({10, 20, 20, 40}), vec({1, 2, 3, 4})),
              4.5 / std::sqrt(4.5 * 5), 1e-12);
  // Any increasing map of one side leaves the ranks, so rho = 1.
  EXPECT_NEAR(SpearmanCorrelation(vec({1, 2, 3, 4}), vec({1, 8, 27, 1000})), 1,
              1e-12);
  EXPECT_NEAR(SpearmanCorrelation(vec({1, 2, 3, 4}), vec({9, 5, 2, 0})), -1,
              1e-12);
}

TEST(QkRankTest, RelativeSingularValuesAndEffectiveRankOfKnownSpectra) {
  // (4, 3) with singular values 4, 2, 1 (rows permuted, one zero row).
  const torch::Tensor m = torch::tensor({0.0, 2.0, 0.0, 0.0, 0.0, 0.0, 4.0, 0.0,
                                         0.0, 0.0, 0.0, -1.0},
                                        torch::kDouble)
                              .view({4, 3});
  const torch::Tensor relative = RelativeSingularValues(m);
  ASSERT_EQ(relative.numel(), 3);
  EXPECT_NEAR(relative[0].item<double>(), 1, 1e-12);
  EXPECT_NEAR(relative[1].item<double>(), 0.5, 1e-12);
  EXPECT_NEAR(relative[2].item<double>(), 0.25, 1e-12);
  EXPECT_NEAR(EffectiveRank(torch::eye(3, torch::kDouble)), 3, 1e-9);
  EXPECT_NEAR(EffectiveRank(torch::ones({5, 3}, torch::kDouble)), 1, 1e-6);
  // sigma = (2, 1, 1): p = (1/2, 1/4, 1/4), entropy 1.5 ln 2, rank 2^1.5.
  EXPECT_NEAR(EffectiveRank(
                  torch::diag(torch::tensor({2.0, 1.0, 1.0}, torch::kDouble))),
              std::pow(2, 1.5), 1e-9);
}

}  // namespace
}  // namespace sparse_layers::analysis
