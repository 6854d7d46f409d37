#include <torch/torch.h>

#include "analysis/bsp/chess_board.h"
#include "analysis/bsp/feature_classifiers.h"
#include "gtest/gtest.h"

namespace sparse_layers::analysis {
namespace {

// Properties g0 = {x0, x1}, g1 = {x1, x2}, g2 = {x3}; features f0, f1.
torch::Tensor HandProperties() {
  return torch::tensor({1, 0, 0, 1, 1, 0, 0, 1, 0, 0, 0, 1}, torch::kUInt8)
      .view({4, 3});
}
torch::Tensor HandFeatures() {
  return torch::tensor({1.0, 0.0, 0.5, 0.2, 0.0, 1.0, 0.0, 0.9}).view({4, 2});
}

TEST(CoverageTest, HandComputedF1s) {
  const torch::Tensor features = HandFeatures();
  const torch::Tensor maxima = FeatureMaxima(features);
  // t = 0: best F1 per property 1 (f0), 0.8 (f1), 0.5 (f1) -> 0.7667.
  // t = 0.6: 2/3, 1/2, 2/3 -> 0.6111. t = 0.95: 2/3, 2/3, 0 -> 0.4444.
  const CoverageResult result =
      Coverage(features, maxima, HandProperties(), {0.0, 0.6, 0.95});
  ASSERT_EQ(result.mean_best_f1_per_threshold.size(), 3u);
  EXPECT_NEAR(result.mean_best_f1_per_threshold[0], 2.3 / 3, 1e-6);
  EXPECT_NEAR(result.mean_best_f1_per_threshold[1],
              (2.0 / 3 + 0.5 + 2.0 / 3) / 3, 1e-6);
  EXPECT_NEAR(result.mean_best_f1_per_threshold[2], (4.0 / 3) / 3, 1e-6);
  EXPECT_NEAR(result.coverage_code, 2.3 / 3, 1e-6);
  EXPECT_EQ(result.best_threshold_code, 0);
  // Paper: per property max over t: 1, 0.8, 2/3.
  EXPECT_NEAR(result.coverage_paper, (1 + 0.8 + 2.0 / 3) / 3, 1e-6);
  EXPECT_EQ(result.live_features, 2);
}

TEST(CoverageTest, DeadFeaturesAreDroppedAndIndicatorsScoreOne) {
  torch::manual_seed(0);
  const torch::Tensor properties =
      (torch::rand({200, 5}) < 0.3).to(torch::kUInt8);
  // Features 0-4 are the properties scaled; feature 5 never fires.
  const torch::Tensor features =
      torch::cat({properties.to(torch::kFloat) * 3, torch::zeros({200, 1})}, 1);
  const torch::Tensor maxima = FeatureMaxima(features);
  const CoverageResult coverage =
      Coverage(features, maxima, properties, DefaultThresholds());
  EXPECT_EQ(coverage.live_features, 5);
  EXPECT_NEAR(coverage.coverage_code, 1.0, 1e-6);
  EXPECT_NEAR(coverage.coverage_paper, 1.0, 1e-6);
  const ReconstructionResult reconstruction =
      Reconstruction(features, properties, features, properties, maxima,
                     DefaultThresholds(), LabellingRule());
  EXPECT_NEAR(reconstruction.reconstruction_code, 1.0, 1e-6);
  EXPECT_NEAR(reconstruction.reconstruction_paper, 1.0, 1e-6);
  // Random features explain little.
  const torch::Tensor noise = torch::rand({200, 6});
  const CoverageResult random =
      Coverage(noise, FeatureMaxima(noise), properties, DefaultThresholds());
  EXPECT_LT(random.coverage_code, 0.6);  // ~2p/(1+p) = 0.46 at p = 0.3.
}

TEST(ReconstructionTest, LabellingRuleAndHandComputedScores) {
  const torch::Tensor features = HandFeatures();
  const torch::Tensor maxima = FeatureMaxima(features);
  LabellingRule rule;
  rule.min_true_positives = 1;
  // At t = 0.6 only f0 -> g0 has precision >= 0.95 (1/1); f1's are 1/2.
  const torch::Tensor labels =
      HighPrecisionLabels(features, maxima, HandProperties(), 0.6, rule);
  EXPECT_TRUE(torch::equal(
      labels, torch::tensor({1, 0, 0, 0, 0, 0}, torch::kBool).view({2, 3})));
  rule.min_true_positives = 10;  // The code's significance rule removes it.
  EXPECT_EQ(HighPrecisionLabels(features, maxima, HandProperties(), 0.6, rule)
                .sum()
                .item<int64_t>(),
            0);
  // Test boards: f0 fires on x0 and x1 at t = 0.6; truth as in training.
  rule.min_true_positives = 1;
  const torch::Tensor test_features =
      torch::tensor({0.9, 0.0, 0.7, 0.0, 0.1, 0.0, 0.0, 0.0}).view({4, 2});
  const ReconstructionResult result =
      Reconstruction(features, HandProperties(), test_features,
                     HandProperties(), maxima, {0.6}, rule);
  // Predicted g0 on x0 (TP) and x1 (TP); missed g1 on x1, x2 and g2 on x3:
  // micro F1 = 2*2 / (2*2 + 0 + 3) = 4/7.
  EXPECT_NEAR(result.reconstruction_code, 4.0 / 7, 1e-6);
  // Per board: x0 1, x1 2/3, x2 0, x3 0 -> 5/12.
  EXPECT_NEAR(result.reconstruction_paper, (1 + 2.0 / 3) / 4, 1e-6);
}

TEST(ChessBoardTest, FenParsingAndPieceOnSquareProperties) {
  auto initial =
      ParseFenBoard("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1");
  ASSERT_TRUE(initial.ok());
  EXPECT_EQ((*initial)[0], 4);    // a1 white rook.
  EXPECT_EQ((*initial)[4], 6);    // e1 white king.
  EXPECT_EQ((*initial)[12], 1);   // e2 white pawn.
  EXPECT_EQ((*initial)[59], -5);  // d8 black queen.
  EXPECT_EQ((*initial)[60], -6);  // e8 black king.
  EXPECT_EQ(PieceOnSquareProperties(*initial, false).sum().item<int64_t>(), 32);
  EXPECT_EQ(PieceOnSquareProperties(*initial, true).sum().item<int64_t>(), 0);
  // After 1.e4: only the e4 pawn differs from the initial position.
  auto e4 = ParseFenBoard(
      "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq e3 0 1");
  ASSERT_TRUE(e4.ok());
  const torch::Tensor masked = PieceOnSquareProperties(*e4, true);
  EXPECT_EQ(masked.sum().item<int64_t>(), 1);
  EXPECT_EQ(masked[PieceOnSquareIndex(1, 28)].item<int>(), 1);  // e4 = 28.
  EXPECT_EQ(PieceOnSquareIndex(-6, 0), 0);
  EXPECT_EQ(PieceOnSquareIndex(6, 63), 767);
  EXPECT_FALSE(ParseFenBoard("rnbqkbnr/ppp/8 w - - 0 1").ok());
  EXPECT_FALSE(
      ParseFenBoard("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNX w").ok());
}

TEST(ChessBoardTest, EvaluatedDotsAndTheirStates) {
  const std::string game = ";1.e4 e5 2.Nf3 Nc6 3.Bb5";
  const std::vector<int> dots = EvaluatedDots(game);
  ASSERT_EQ(dots, (std::vector<int>{2, 10, 20}));
  // '.' of move n sees the position after 2(n-1) plies.
  EXPECT_EQ(StateIndexAt(game, dots[0], 6), 0);
  EXPECT_EQ(StateIndexAt(game, dots[1], 6), 2);
  EXPECT_EQ(StateIndexAt(game, dots[2], 6), 4);
  EXPECT_EQ(StateIndexAt(game, dots[2], 3), 2);  // Clipped to the last state.
  EXPECT_EQ(EvaluatedDots(game, 11, 20).size(), 2u);
  EXPECT_EQ(EvaluatedDots(game, 256, 1).size(), 1u);
}

}  // namespace
}  // namespace sparse_layers::analysis
