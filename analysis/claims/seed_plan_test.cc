#include "analysis/claims/seed_plan.h"

#include <cmath>
#include <string>

#include "analysis/claims/statistics.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"

namespace sparse_layers::claims {
namespace {

TEST(SeedsForPower, MatchesTheOneSampleTTable) {
  // Cohen's d = 1 at two-sided 5%: 10 observations give 80% power (power
  // tables: 0.80 at n = 10, 0.74 at n = 9).
  EXPECT_EQ(SeedsForPower(1.0, 1.0, 0.05, 0.8, false, 1000), 10);
  // d = 0.5 needs 34 (tables: 33.4 by the normal approximation, 34 by t).
  EXPECT_EQ(SeedsForPower(2.0, 1.0, 0.05, 0.8, false, 1000), 34);
  // A Bonferroni share of 5% over 5 levels asks more.
  EXPECT_GT(SeedsForPower(1.0, 1.0, 0.01, 0.8, false, 1000), 10);
  // Nothing to detect, or a cap that is too low.
  EXPECT_EQ(SeedsForPower(1.0, 0.0, 0.05, 0.8, false, 50), 51);
  EXPECT_EQ(SeedsForPower(10.0, 0.1, 0.05, 0.8, false, 50), 51);
}

TEST(SdFromHalfWidth, InvertsTheInterval) {
  // sd 2, n 4: half = t_{.975,3} 2 / 2 = 3.1824.
  EXPECT_NEAR(SdFromHalfWidth(3.182446, 4, 0.95), 2.0, 1e-5);
  EXPECT_TRUE(std::isnan(SdFromHalfWidth(1.0, 1, 0.95)));
}

ClaimSet Claims() {
  ClaimSet set;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(
      "experiment: 'x' "
      "claims { id: 'one' comparison: BETTER smallest_effect: 1 } "
      "claims { id: 'levels' comparison: BETTER smallest_effect: 1 over: 'k' } "
      "claims { id: 'keeps' comparison: NOT_WORSE tolerance: 1 } "
      "claims { id: 'r' comparison: CORRELATION over: 'k' } "
      "claims { id: 'fixed' comparison: BETTER basis: BY_DESIGN } "
      "claims { id: 'unseen' comparison: BETTER smallest_effect: 1 } "
      "claims { id: 'flat' comparison: BETTER smallest_effect: 1 }",
      &set));
  return set;
}

TEST(PlanSeeds, FromThePilotsIntervals) {
  // Half-width t_{.975,2} sd / sqrt(3) with sd 1 at every row.
  const double half = 4.302653 / std::sqrt(3.0);
  std::string csv = "id,level,effect,ci_low,ci_high,n\n";
  auto row = [&](const std::string& id, const std::string& level) {
    csv += id + "," + level + ",0," + std::to_string(-half) + "," +
           std::to_string(half) + ",3\n";
  };
  row("one", "");
  for (const char* k : {"1", "2", "3", "4", "5"}) row("levels", k);
  row("keeps", "");
  row("r", "");
  row("fixed", "");
  csv += "flat,,0,0,0,3\n";
  auto pilot = TidyTable::Parse(csv, "pilot.csv");
  ASSERT_TRUE(pilot.ok()) << pilot.status();
  auto plans = PlanSeeds(Claims(), *pilot, 0.8, 1000);
  ASSERT_TRUE(plans.ok()) << plans.status();
  ASSERT_EQ(plans->size(), 7u);
  EXPECT_NEAR((*plans)[0].pilot_sd, 1.0, 1e-5);
  EXPECT_EQ((*plans)[0].seeds_needed, 10);
  // Five levels: each at 1% (Bonferroni), as the engine judges them, and at
  // 0.8^(1/5) power, so that all five hold together with 80%.
  EXPECT_EQ((*plans)[1].levels, 5);
  EXPECT_EQ((*plans)[1].seeds_needed,
            SeedsForPower(1.0, 1.0, 0.01, std::pow(0.8, 0.2), false, 1000));
  EXPECT_GT((*plans)[1].seeds_needed,
            SeedsForPower(1.0, 1.0, 0.01, 0.8, false, 1000));
  // NOT_WORSE: powered at its tolerance, a true effect of 0.
  EXPECT_EQ((*plans)[2].seeds_needed, 10);
  EXPECT_NE((*plans)[3].why_not.find("a correlation"), std::string::npos);
  EXPECT_EQ((*plans)[4].why_not, "design statement");
  EXPECT_EQ((*plans)[5].why_not, "no pilot rows");
  EXPECT_EQ((*plans)[6].why_not, "no spread in the pilot");
  const std::string table = RenderSeedPlan(*plans, 0.8, 6);
  EXPECT_NE(
      table.find("| one | 1 | 1 | 3 | 1 | 10 | underpowered (needs 10) |"),
      std::string::npos)
      << table;
}

}  // namespace
}  // namespace sparse_layers::claims
