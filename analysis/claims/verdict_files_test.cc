#include "analysis/claims/verdict_files.h"

#include <string>

#include "analysis/claims/claims_test_util.h"
#include "gtest/gtest.h"

namespace sparse_layers::claims {
namespace {

ClaimSet ParseSet(const std::string& text) {
  return testing::ParseText<ClaimSet>(text);
}

const char kHeader[] =
    "experiment,kind,id,source,statement,level,verdict,effect,ci_low,ci_high,"
    "n,paper_effect,reason,confidence\n";

TEST(VerifyVerdicts, ACountedVerdictOnAZeroWidthIntervalIsAnError) {
  const ClaimSet set = ParseSet(
      "experiment: 'x' claims { id: 'c' comparison: BETTER } "
      "claims { id: 'd' comparison: BETTER basis: BY_DESIGN }");
  const std::string design = "x,design,d,,,,HOLDS,1,1,1,3,,,0.95\n";
  auto flat = TidyTable::Parse(
      kHeader + std::string("x,claim,c,,,,HOLDS,1,1,1,3,,,0.95\n") + design,
      "v.csv");
  ASSERT_TRUE(flat.ok());
  auto checked = VerifyVerdicts(set, *flat, 2);
  ASSERT_FALSE(checked.ok());
  EXPECT_NE(checked.status().message().find("zero-width interval"),
            std::string::npos)
      << checked.status();
  // A design statement may have one; a claim with spread passes.
  auto fine = TidyTable::Parse(
      kHeader + std::string("x,claim,c,,,,HOLDS,1,0.5,1.5,3,,,0.95\n") + design,
      "v.csv");
  ASSERT_TRUE(fine.ok());
  EXPECT_TRUE(VerifyVerdicts(set, *fine, 2).ok());
}

TEST(VerifyVerdicts, ALevelRowOnAZeroWidthIntervalIsAnError) {
  const ClaimSet set =
      ParseSet("experiment: 'x' claims { id: 'c' comparison: BETTER }");
  auto flat = TidyTable::Parse(
      kHeader + std::string("x,claim,c,,,,NOT TESTABLE,,,,,,why,\n"
                            "x,claim,c,,,1,HOLDS,1,1,1,3,,,0.975\n"),
      "v.csv");
  ASSERT_TRUE(flat.ok());
  auto checked = VerifyVerdicts(set, *flat, 2);
  ASSERT_FALSE(checked.ok());
  EXPECT_NE(checked.status().message().find("at level 1 is HOLDS on a "
                                            "zero-width interval"),
            std::string::npos)
      << checked.status();
}

TEST(VerdictsTable, AValueEverySeedSharesHasNoInterval) {
  static const Claim claim = testing::ParseText<Claim>("id: 'c'");
  ClaimResult result;
  result.claim = &claim;
  result.verdict = Verdict::kNotTestable;
  LevelResult level;
  level.level = "1";
  level.effect.estimate = level.effect.low = level.effect.high = 0.5;
  level.effect.n = 2;
  level.no_spread = true;
  level.verdict = Verdict::kNotTestable;
  result.levels = {level, level};
  result.levels[1].level = "2";
  const TidyTable table = VerdictsTable("x", {result});
  ASSERT_EQ(table.rows().size(), 3u);
  auto low = table.Column("ci_low");
  ASSERT_TRUE(low.ok());
  EXPECT_EQ(table.rows()[1][*low], "");
  auto effect = table.Column("effect");
  ASSERT_TRUE(effect.ok());
  EXPECT_EQ(table.rows()[1][*effect], "0.5");
}

TEST(VerifyVerdicts, EveryClaimOnceWithAKnownVerdict) {
  const ClaimSet set = ParseSet(
      "experiment: 'x' controls { id: 'k' comparison: BETTER } "
      "claims { id: 'c' comparison: BETTER }");
  auto missing = TidyTable::Parse(
      kHeader + std::string("x,control,k,,,,HOLDS,1,0.5,1.5,3,,,0.95\n"),
      "v.csv");
  ASSERT_TRUE(missing.ok());
  EXPECT_FALSE(VerifyVerdicts(set, *missing, 0).ok());
  auto unknown = TidyTable::Parse(
      kHeader + std::string("x,control,k,,,,HOLDS,1,0.5,1.5,3,,,0.95\n"
                            "x,claim,c,,,,FAILS,1,0.5,1.5,3,,,0.95\n"),
      "v.csv");
  ASSERT_TRUE(unknown.ok());
  EXPECT_FALSE(VerifyVerdicts(set, *unknown, 0).ok());
  auto both = TidyTable::Parse(
      kHeader + std::string("x,control,k,,,,HOLDS,1,0.5,1.5,3,,,0.95\n"
                            "x,claim,c,,,,UNRESOLVED,1,-0.5,1.5,3,,,0.95\n"),
      "v.csv");
  ASSERT_TRUE(both.ok());
  auto checked = VerifyVerdicts(set, *both, 3);
  ASSERT_TRUE(checked.ok()) << checked.status();
  EXPECT_EQ(*checked, 2);
}

}  // namespace
}  // namespace sparse_layers::claims
