#include "analysis/claims/statistics.h"

#include <cmath>

#include "gtest/gtest.h"

namespace sparse_layers::claims {
namespace {

// Two-sided 95% critical values of Student's t (any statistics table).
TEST(StudentT, QuantilesMatchTables) {
  EXPECT_NEAR(StudentTQuantile(0.975, 1), 12.7062, 1e-4);
  EXPECT_NEAR(StudentTQuantile(0.975, 2), 4.3027, 1e-4);
  EXPECT_NEAR(StudentTQuantile(0.975, 4), 2.7764, 1e-4);
  EXPECT_NEAR(StudentTQuantile(0.975, 10), 2.2281, 1e-4);
  EXPECT_NEAR(StudentTQuantile(0.975, 30), 2.0423, 1e-4);
  EXPECT_NEAR(StudentTQuantile(0.995, 5), 4.0321, 1e-4);
  EXPECT_NEAR(StudentTQuantile(0.025, 4), -2.7764, 1e-4);
  EXPECT_NEAR(StudentTCdf(0.0, 3), 0.5, 1e-12);
  // df = 1 is the Cauchy distribution: F(t) = 1/2 + atan(t)/pi.
  EXPECT_NEAR(StudentTCdf(2.5, 1), 0.5 + std::atan(2.5) / M_PI, 1e-10);
}

TEST(MeanInterval, ByHand) {
  // mean 2, s = 1, half-width t_{.975,2} / sqrt(3).
  const Interval i = MeanInterval({1, 2, 3}, 0.95);
  EXPECT_DOUBLE_EQ(i.estimate, 2.0);
  EXPECT_NEAR(i.high - 2.0, 4.302653 / std::sqrt(3.0), 1e-5);
  EXPECT_NEAR(2.0 - i.low, 4.302653 / std::sqrt(3.0), 1e-5);
  EXPECT_EQ(i.n, 3);
}

TEST(MeanInterval, OneValueIsUnbounded) {
  const Interval i = MeanInterval({0.3}, 0.95);
  EXPECT_DOUBLE_EQ(i.estimate, 0.3);
  EXPECT_TRUE(std::isinf(i.low) && i.low < 0);
  EXPECT_TRUE(std::isinf(i.high) && i.high > 0);
}

TEST(WelchInterval, ByHand) {
  // var/n: 1/3 and 4/3; Satterthwaite df = (5/3)^2 / ((1/3)^2/2 + (4/3)^2/2)
  // = 2.9412.
  const Interval i = WelchInterval({1, 2, 3}, {4, 6, 8}, 0.95);
  EXPECT_DOUBLE_EQ(i.estimate, -4.0);
  const double df = (25.0 / 9.0) / ((1.0 / 9.0) / 2.0 + (16.0 / 9.0) / 2.0);
  EXPECT_NEAR(df, 2.9412, 1e-4);
  const double half = StudentTQuantile(0.975, df) * std::sqrt(5.0 / 3.0);
  EXPECT_NEAR(i.high, -4.0 + half, 1e-9);
  EXPECT_NEAR(i.low, -4.0 - half, 1e-9);
  // t_{.975} between df 2 (4.303) and 3 (3.182), nearer 3.
  EXPECT_GT(half / std::sqrt(5.0 / 3.0), 3.182);
  EXPECT_LT(half / std::sqrt(5.0 / 3.0), 3.30);
}

TEST(CorrelationInterval, FisherZByHand) {
  // r = 0.7746 (sxy 6, sxx 10, syy 6); z = atanh(r), se = 1/sqrt(5 - 3).
  const Interval i =
      CorrelationInterval({1, 2, 3, 4, 5}, {2, 4, 5, 4, 5}, 0.95);
  EXPECT_NEAR(i.estimate, 6.0 / std::sqrt(60.0), 1e-12);
  const double z = std::atanh(6.0 / std::sqrt(60.0)),
               half = 1.959964 / std::sqrt(2.0);
  EXPECT_NEAR(i.low, std::tanh(z - half), 1e-5);
  EXPECT_NEAR(i.high, std::tanh(z + half), 1e-5);
  EXPECT_LT(i.low, 0.0);  // Five points cannot rule out no correlation here.
}

TEST(CorrelationInterval, ThreePointsHaveNoInterval) {
  const Interval i = CorrelationInterval({1, 2, 3}, {1, 2, 3.5}, 0.95);
  EXPECT_DOUBLE_EQ(i.low, -1.0);
  EXPECT_DOUBLE_EQ(i.high, 1.0);
}

TEST(Slope, ByHand) { EXPECT_DOUBLE_EQ(Slope({1, 2, 3}, {1, 3, 5}), 2.0); }

}  // namespace
}  // namespace sparse_layers::claims
