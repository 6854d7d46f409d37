#include "analysis/probing/sparse_probing.h"

#include <gtest/gtest.h>

#include <cmath>

namespace sparse_layers::analysis {
namespace {

TEST(SparseProbingTest, RanksUnitsBySignedMeanDifference) {
  const torch::Tensor features = torch::tensor({{1.0f, 0.0f, 5.0f},
                                                {3.0f, 0.0f, 5.0f},
                                                {0.0f, 2.0f, 5.0f},
                                                {0.0f, 4.0f, 5.0f}});
  const torch::Tensor labels = torch::tensor({true, true, false, false});
  // Differences: +2, -3, 0.
  EXPECT_EQ(TopUnitsByMeanDifference(features, labels, 3),
            (std::vector<int64_t>{0, 2, 1}));
  EXPECT_EQ(TopUnitsByMeanDifference(features, labels, 1),
            (std::vector<int64_t>{0}));
}

// Unequal classes: each side's mean is over its own rows, as the masked
// means on random features rank them.
TEST(SparseProbingTest, MeanDifferenceWeighsEachClassByItsOwnCount) {
  torch::manual_seed(3);
  const torch::Tensor features = torch::randn({60, 40});
  const torch::Tensor labels = torch::rand({60}) < 0.2;
  const int64_t positives = labels.sum().item<int64_t>();
  ASSERT_GT(positives, 3);
  ASSERT_LT(positives, 20);
  const torch::Tensor f = features.to(torch::kDouble);
  const torch::Tensor order =
      std::get<1>(
          (f.index({labels}).mean(0) - f.index({~labels}).mean(0)).topk(10))
          .contiguous();
  EXPECT_EQ(TopUnitsByMeanDifference(features, labels, 10),
            std::vector<int64_t>(order.data_ptr<int64_t>(),
                                 order.data_ptr<int64_t>() + 10));
}

TEST(SparseProbingTest, F1AndBalancedAccuracyByHand) {
  const torch::Tensor predicted = torch::tensor({true, true, false, false});
  const torch::Tensor truth = torch::tensor({true, false, true, false});
  EXPECT_DOUBLE_EQ(F1Score(predicted, truth), 0.5);  // 2 / (2 + 1 + 1).
  EXPECT_DOUBLE_EQ(BalancedAccuracy(predicted, truth), 0.5);
  EXPECT_DOUBLE_EQ(
      F1Score(torch::tensor({false, false}), torch::tensor({true, false})),
      0.0);
  const torch::Tensor skewed = torch::tensor({true, true, true, false});
  // TPR 1/1, TNR 1/3.
  EXPECT_NEAR(
      BalancedAccuracy(skewed, torch::tensor({true, false, false, false})),
      (1.0 + 1.0 / 3) / 2, 1e-12);
}

// Symmetric data x = -1 (negative), +1 (positive): b = 0 and the optimum of
// 0.5 w^2 + 2 log(1 + e^-w) solves w = 2 / (1 + e^w).
TEST(SparseProbingTest, LogisticRegressionReachesTheL2Optimum) {
  const LogisticFit fit = FitBalancedLogistic(torch::tensor({-1.0, 1.0}),
                                              torch::tensor({false, true}));
  EXPECT_NEAR(fit.bias, 0.0, 1e-9);
  EXPECT_NEAR(fit.weight, 2.0 / (1.0 + std::exp(fit.weight)), 1e-9);
  EXPECT_GT(fit.weight, 0.6);
  EXPECT_LT(fit.weight, 0.7);
}

// Balanced weights move the threshold to the middle of an imbalanced set:
// 1 positive at x = 2 and 9 negatives at x = 0 must still be separated.
TEST(SparseProbingTest, ClassBalancingKeepsTheRareClassPredicted) {
  torch::Tensor x = torch::zeros({10}, torch::kDouble);
  x[0] = 2.0;
  torch::Tensor y = torch::zeros({10}, torch::kBool);
  y[0] = true;
  const LogisticFit fit = FitBalancedLogistic(x, y);
  EXPECT_DOUBLE_EQ(F1Score(Predict(fit, x), y), 1.0);
}

TEST(SparseProbingTest, FindsAPlantedFeatureAndBothVariantsAgree) {
  torch::manual_seed(0);
  const int64_t n = 300, units = 40, planted = 17;
  auto make = [&](int64_t rows) {
    torch::Tensor labels = torch::rand({rows}) < 0.3;
    torch::Tensor features = torch::randn({rows, units});
    features.select(1, planted).add_(labels.to(torch::kFloat) * 4.0);
    return std::make_pair(features, labels);
  };
  auto [fx, fy] = make(n);
  auto [vx, vy] = make(n / 4);
  auto [tx, ty] = make(n / 4);
  const ProbeOutcome outcome = ProbeOneClass(fx, fy, vx, vy, tx, ty, 10);
  EXPECT_EQ(outcome.best_unit, planted);
  EXPECT_EQ(outcome.selected_unit, planted);
  EXPECT_GT(outcome.best_f1, 0.9);
  EXPECT_DOUBLE_EQ(outcome.selected_f1, outcome.best_f1);
  // Pure noise gives a much lower F1.
  const ProbeOutcome noise =
      ProbeOneClass(torch::randn({n, units}), fy, torch::randn({n / 4, units}),
                    vy, torch::randn({n / 4, units}), ty, 10);
  EXPECT_LT(noise.selected_f1, 0.7);
}

TEST(UnitClassDensitiesTest, SharesPerClassOverTheValuesRange) {
  // Range [0, 4] in 4 bins of width 1; 4 falls in the last bin.
  const torch::Tensor values = torch::tensor({0.0, 0.5, 1.5, 3.9, 4.0, 2.2});
  const torch::Tensor positive =
      torch::tensor({1, 1, 0, 0, 1, 0}).to(torch::kBool);
  const ClassDensities d = UnitClassDensities(values, positive, 4);
  EXPECT_EQ(d.centres, (std::vector<double>{0.5, 1.5, 2.5, 3.5}));
  const double third = 1.0 / 3;
  EXPECT_EQ(d.positive, (std::vector<double>{2 * third, 0, 0, third}));
  EXPECT_EQ(d.negative, (std::vector<double>{0, third, third, third}));
  // A constant unit: every text in the middle of a unit-wide range.
  const ClassDensities flat =
      UnitClassDensities(torch::full({3}, 2.0), positive.slice(0, 0, 3), 2);
  EXPECT_EQ(flat.centres, (std::vector<double>{1.75, 2.25}));
  EXPECT_EQ(flat.positive, (std::vector<double>{0, 1}));
  EXPECT_EQ(flat.negative, (std::vector<double>{0, 1}));
}

}  // namespace
}  // namespace sparse_layers::analysis
