#include "analysis/claims/claims_engine.h"

#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "analysis/claims/claims_test_util.h"
#include "analysis/claims/section_renderer.h"
#include "analysis/claims/verdict_files.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"

namespace sparse_layers::claims {
namespace {

using testing::OneTable;

Claim ParseClaim(const std::string& text) {
  return testing::ParseText<Claim>(text);
}
ClaimSet ParseSet(const std::string& text) {
  return testing::ParseText<ClaimSet>(text);
}

ClaimResult Judge(const std::string& claim_text, const std::string& csv,
                  const std::map<std::string, Verdict>& controls = {}) {
  static Claim* claim = nullptr;
  delete claim;
  claim = new Claim(ParseClaim(claim_text));
  auto result = JudgeClaim(*claim, false, OneTable(csv), controls);
  EXPECT_TRUE(result.ok()) << result.status();
  return result.ok() ? *result : ClaimResult{};
}

constexpr char kArms[] =
    "id: 'c' table: 't.csv' arm_column: 'arm' a: 'new' b: 'old' metric: 'loss' "
    "better: LOWER_IS_BETTER ";
const std::string kBetter = std::string(kArms) + "comparison: BETTER";

TEST(ClaimsEngine, PairedEffectHoldsWithHandComputedInterval) {
  // Paired differences -0.5, -0.6, -0.55: mean -0.55, s 0.05, half-width
  // t_{.975,2} 0.05 / sqrt(3).
  const ClaimResult r = Judge(kBetter,
                              "arm,seed,loss\n"
                              "new,1,1.0\nnew,2,1.4\nnew,3,0.95\n"
                              "old,1,1.5\nold,2,2.0\nold,3,1.5\n");
  ASSERT_EQ(r.levels.size(), 1u);
  EXPECT_EQ(r.levels[0].method, IntervalMethod::kPairedT);
  EXPECT_NEAR(r.levels[0].effect.estimate, -0.55, 1e-12);
  const double half = 4.302653 * 0.05 / std::sqrt(3.0);
  EXPECT_NEAR(r.levels[0].effect.low, -0.55 - half, 1e-5);
  EXPECT_NEAR(r.levels[0].effect.high, -0.55 + half, 1e-5);
  EXPECT_EQ(r.levels[0].effect.n, 3);
  EXPECT_EQ(r.verdict, Verdict::kHolds);
}

TEST(ClaimsEngine, NullEffectIsUnresolved) {
  // Differences -0.05, +0.1, -0.1: the mean favours "new" but the interval
  // contains zero.
  const ClaimResult r = Judge(kBetter,
                              "arm,seed,loss\n"
                              "new,1,0.95\nnew,2,1.1\nnew,3,0.9\n"
                              "old,1,1.0\nold,2,1.0\nold,3,1.0\n");
  EXPECT_LT(r.levels[0].effect.estimate, 0.0);
  EXPECT_EQ(r.verdict, Verdict::kUnresolved);
}

TEST(ClaimsEngine, EffectTheOtherWayDoesNotHold) {
  const ClaimResult r = Judge(kBetter,
                              "arm,seed,loss\n"
                              "new,1,2.0\nnew,2,2.1\nnew,3,2.05\n"
                              "old,1,1.0\nold,2,1.0\nold,3,1.1\n");
  EXPECT_EQ(r.verdict, Verdict::kDoesNotHold);
}

TEST(ClaimsEngine, OneSeedIsUnresolvedHoweverLargeTheDifference) {
  const ClaimResult r = Judge(kBetter, "arm,seed,loss\nnew,1,1.0\nold,1,5.0\n");
  EXPECT_EQ(r.levels[0].effect.n, 1);
  EXPECT_TRUE(std::isinf(r.levels[0].effect.low));
  EXPECT_EQ(r.verdict, Verdict::kUnresolved);
}

TEST(ClaimsEngine, ArmsWithDifferentSeedsUseWelch) {
  // A: 1, 2, 3 (seeds 1-3); B: 4, 6, 8 (seeds 4-6): Welch, mean difference -4.
  const ClaimResult r = Judge(kBetter,
                              "arm,seed,loss\n"
                              "new,1,1\nnew,2,2\nnew,3,3\n"
                              "old,4,4\nold,5,6\nold,6,8\n");
  EXPECT_EQ(r.levels[0].method, IntervalMethod::kWelchT);
  EXPECT_DOUBLE_EQ(r.levels[0].effect.estimate, -4.0);
  const Interval welch = WelchInterval({1, 2, 3}, {4, 6, 8}, kConfidence);
  EXPECT_DOUBLE_EQ(r.levels[0].effect.low, welch.low);
  // The same numbers paired by seed would give a much narrower interval:
  // pairing matters.
  const ClaimResult paired = Judge(kBetter,
                                   "arm,seed,loss\n"
                                   "new,1,1\nnew,2,2\nnew,3,3\n"
                                   "old,1,4\nold,2,6\nold,3,8\n");
  EXPECT_EQ(paired.levels[0].method, IntervalMethod::kPairedT);
  EXPECT_DOUBLE_EQ(paired.levels[0].effect.estimate, -4.0);
  EXPECT_NEAR(paired.levels[0].effect.high - paired.levels[0].effect.low,
              2 * 4.302653 / std::sqrt(3.0), 1e-4);
}

TEST(ClaimsEngine, RelativeDifferencePairsBySeed) {
  // A / B - 1 per seed: -0.1, -0.2, -0.15.
  const ClaimResult r = Judge(kBetter + " effect: RELATIVE_DIFFERENCE",
                              "arm,seed,loss\nnew,1,9\nnew,2,8\nnew,3,8.5\nold,"
                              "1,10\nold,2,10\nold,3,10\n");
  EXPECT_NEAR(r.levels[0].effect.estimate, -0.15, 1e-12);
  EXPECT_EQ(r.verdict, Verdict::kHolds);
}

TEST(ClaimsEngine, RelativeDifferenceOverAZeroBaselineIsNotTestable) {
  // Seed 3's B is 0: A / B - 1 is undefined there, so no interval, however
  // favourable the other seeds (a bound like NOT_WORSE must not hold on it):
  // nothing is judged, so the claim is NOT TESTABLE, not a counted UNRESOLVED.
  const std::string csv =
      "arm,seed,loss\nnew,1,9\nnew,2,8\nnew,3,1\nold,1,10\nold,2,10\nold,3,0\n";
  const ClaimResult r = Judge(kBetter + " effect: RELATIVE_DIFFERENCE", csv);
  EXPECT_TRUE(std::isnan(r.levels[0].effect.estimate));
  EXPECT_EQ(r.verdict, Verdict::kNotTestable);
  const ClaimResult bound =
      Judge(std::string(kArms) +
                "effect: RELATIVE_DIFFERENCE comparison: NOT_WORSE "
                "tolerance: 0.5",
            csv);
  EXPECT_EQ(bound.verdict, Verdict::kNotTestable);
}

TEST(ClaimsEngine, AMeanThatCancelsToRoundingIsZero) {
  // Seed 3's B averages 0.1, 0.2 and -0.3, which sum to 5.6e-17 in binary:
  // zero, so the relative effect is undefined there (it divided by 1.9e-17).
  const std::string csv =
      "arm,seed,unit,loss\nnew,1,a,9\nnew,2,a,8\nnew,3,a,0.1\nnew,3,b,0\n"
      "new,3,c,0\nold,1,a,10\nold,2,a,10\nold,3,a,0.1\nold,3,b,0.2\n"
      "old,3,c,-0.3\n";
  const ClaimResult r =
      Judge(kBetter + " effect: RELATIVE_DIFFERENCE average_over: 'unit'", csv);
  EXPECT_TRUE(std::isnan(r.levels[0].effect.estimate));
  EXPECT_EQ(r.verdict, Verdict::kNotTestable);
  // A small mean well above the rounding of its terms is kept.
  const ClaimResult small =
      Judge(kBetter + " effect: RELATIVE_DIFFERENCE",
            "arm,seed,loss\nnew,1,0.9e-9\nnew,2,0.8e-9\nnew,3,0.85e-9\n"
            "old,1,1e-9\nold,2,1e-9\nold,3,1e-9\n");
  EXPECT_NEAR(small.levels[0].effect.estimate, -0.15, 1e-9);
}

TEST(ClaimsEngine, ControlNotBeatenMakesTheClaimNotTestable) {
  const std::string csv =
      "arm,seed,loss\nnew,1,1.0\nnew,2,1.4\nnew,3,0.95\nold,1,1.5\nold,2,2."
      "0\nold,3,1.5\n";
  const std::string claim = kBetter + " controls: 'beats_random'";
  EXPECT_EQ(Judge(claim, csv, {{"beats_random", Verdict::kHolds}}).verdict,
            Verdict::kHolds);
  const ClaimResult r =
      Judge(claim, csv, {{"beats_random", Verdict::kUnresolved}});
  EXPECT_EQ(r.verdict, Verdict::kNotTestable);
  EXPECT_NE(r.reason.find("beats_random is UNRESOLVED"), std::string::npos)
      << r.reason;
  // The effect is still measured and shown.
  EXPECT_NEAR(r.levels[0].effect.estimate, -0.55, 1e-12);
}

TEST(ClaimSet, ControlsAreJudgedFirstAndGateClaims) {
  ClaimSet set;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(
      "experiment: 'x' "
      "controls { id: 'beats_random' table: 't.csv' arm_column: 'arm' a: 'new' "
      "b: 'random' metric: 'f1' "
      "  better: HIGHER_IS_BETTER comparison: BETTER } "
      "claims { id: 'competitive' table: 't.csv' arm_column: 'arm' a: 'new' b: "
      "'old' metric: 'f1' "
      "  comparison: WITHIN tolerance: 0.05 controls: 'beats_random' }",
      &set));
  // The random control out-scores the method (as the issue measured: 0.468
  // against 0.457).
  const Tables tables = OneTable(
      "arm,seed,f1\nnew,1,0.45\nnew,2,0.46\nnew,3,0.46\nold,1,0.46\nold,2,0."
      "46\nold,3,0.465\n"
      "random,1,0.47\nrandom,2,0.475\nrandom,3,0.472\n");
  auto results = JudgeClaimSet(set, tables);
  ASSERT_TRUE(results.ok()) << results.status();
  ASSERT_EQ(results->size(), 2u);
  EXPECT_TRUE((*results)[0].is_control);
  EXPECT_EQ((*results)[0].verdict, Verdict::kDoesNotHold);
  EXPECT_EQ((*results)[1].verdict, Verdict::kNotTestable);
  // Controls are not counted as claims in the summary.
  auto summary = SummarizeVerdicts({VerdictsTable("x", *results)});
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_NE(summary->find("| [x](#x) | 0 | 0 | 0 | 1 | 0 / 1 |"),
            std::string::npos)
      << *summary;
}

TEST(ClaimsEngine, GainRatioKeepsAShareOfTheBaselinesGainOverTheControl) {
  // Per seed (A - C) / (B - C) - 1: 0.1 / 0.2, 0.12 / 0.22, 0.08 / 0.16, each
  // minus 1: -0.5, -0.4545..., -0.5.
  const std::string csv =
      "arm,seed,f1\nnew,1,0.6\nnew,2,0.62\nnew,3,0.58\n"
      "old,1,0.7\nold,2,0.72\nold,3,0.66\n"
      "random,1,0.5\nrandom,2,0.5\nrandom,3,0.5\n";
  const std::string claim =
      "id: 'c' table: 't.csv' arm_column: 'arm' a: 'new' b: 'old' "
      "baseline: 'random' metric: 'f1' better: HIGHER_IS_BETTER "
      "effect: GAIN_RATIO comparison: NOT_WORSE ";
  const ClaimResult r = Judge(claim + "tolerance: 0.6", csv);
  ASSERT_EQ(r.levels.size(), 1u);
  const std::vector<double> per_seed = {-0.5, 0.12 / 0.22 - 1.0, -0.5};
  const double mean = (per_seed[0] + per_seed[1] + per_seed[2]) / 3.0;
  double ss = 0;
  for (double v : per_seed) ss += (v - mean) * (v - mean);
  const double half = 4.302653 * std::sqrt(ss / 2.0) / std::sqrt(3.0);
  EXPECT_NEAR(r.levels[0].effect.estimate, mean, 1e-12);
  EXPECT_NEAR(r.levels[0].effect.low, mean - half, 1e-5);
  EXPECT_NEAR(r.levels[0].effect.high, mean + half, 1e-5);
  EXPECT_EQ(r.verdict, Verdict::kHolds);  // -0.550 >= -0.6.
  // Keeping half of the gain is inside the interval [-0.550, -0.420].
  EXPECT_EQ(Judge(claim + "tolerance: 0.5", csv).verdict, Verdict::kUnresolved);
  EXPECT_EQ(Judge(claim + "tolerance: 0.4", csv).verdict,
            Verdict::kDoesNotHold);
  // A baseline that gains nothing over the control in one seed: undefined.
  const ClaimResult no_gain =
      Judge(claim + "tolerance: 0.6",
            "arm,seed,f1\nnew,1,0.6\nnew,2,0.62\nnew,3,0.58\n"
            "old,1,0.5\nold,2,0.72\nold,3,0.66\n"
            "random,1,0.5\nrandom,2,0.5\nrandom,3,0.5\n");
  EXPECT_TRUE(std::isnan(no_gain.levels[0].effect.estimate));
  EXPECT_EQ(no_gain.verdict, Verdict::kNotTestable);
}

TEST(ClaimsEngine, GainRatioIsOrientedForLowerIsBetterAndNeedsBToBeatC) {
  // Cross-entropy (lower is better): C = 3, B = 1, A = 2 +- 0.02 keeps about
  // half of B's gain: -0.5 +- 0.01, so NOT_WORSE within 0.6 holds and within
  // 0.4 does not (no sign flip).
  const std::string csv =
      "arm,seed,ce\nnew,1,2\nnew,2,2.02\nnew,3,1.98\nold,1,1\nold,2,1\n"
      "old,3,1\nrandom,1,3\nrandom,2,3\nrandom,3,3\n";
  const std::string claim =
      "id: 'c' table: 't.csv' arm_column: 'arm' a: 'new' b: 'old' "
      "baseline: 'random' metric: 'ce' better: LOWER_IS_BETTER "
      "effect: GAIN_RATIO comparison: NOT_WORSE ";
  const ClaimResult kept_half = Judge(claim + "tolerance: 0.6", csv);
  EXPECT_NEAR(kept_half.levels[0].effect.estimate, -0.5, 1e-12);
  EXPECT_EQ(kept_half.verdict, Verdict::kHolds);
  EXPECT_EQ(Judge(claim + "tolerance: 0.4", csv).verdict,
            Verdict::kDoesNotHold);
  // A seed where B is worse than chance (B = 3.5 > C = 3): undefined, n = 2.
  const ClaimResult b_below_chance =
      Judge(claim + "tolerance: 0.6",
            "arm,seed,ce\nnew,1,2\nnew,2,2\nold,1,1\nold,2,3.5\n"
            "random,1,3\nrandom,2,3\n");
  EXPECT_TRUE(std::isnan(b_below_chance.levels[0].effect.estimate));
  EXPECT_EQ(b_below_chance.levels[0].effect.n, 2);
  EXPECT_EQ(b_below_chance.verdict, Verdict::kNotTestable);
}

TEST(ClaimSet, GainRatioNeedsABaselineArm) {
  ClaimSet set;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(
      "experiment: 'x' claims { id: 'c' table: 't.csv' arm_column: 'arm' "
      "a: 'new' b: 'old' metric: 'f1' better: HIGHER_IS_BETTER "
      "effect: GAIN_RATIO comparison: NOT_WORSE tolerance: 0.5 }",
      &set));
  const Tables tables =
      OneTable("arm,seed,f1\nnew,1,0.6\nold,1,0.7\nrandom,1,0.5\n");
  auto results = JudgeClaimSet(set, tables);
  ASSERT_FALSE(results.ok());
  EXPECT_NE(results.status().message().find("GAIN_RATIO"), std::string::npos)
      << results.status();
}

TEST(ClaimSet, GainRatioRejectsPoolingAndABaselineThatIsAnArm) {
  const Tables tables =
      OneTable("arm,seed,k,f1\nnew,1,1,0.6\nold,1,1,0.7\nrandom,1,1,0.5\n");
  const std::string head =
      "experiment: 'x' claims { id: 'c' table: 't.csv' arm_column: 'arm' "
      "a: 'new' b: 'old' metric: 'f1' better: HIGHER_IS_BETTER "
      "comparison: NOT_WORSE tolerance: 0.5 ";
  for (const std::string& rest :
       {"effect: GAIN_RATIO baseline: 'random' over: 'k' quantifier: POOLED }",
        "effect: GAIN_RATIO baseline: 'old' }",
        "effect: DIFFERENCE baseline: 'random' }"}) {
    ClaimSet set;
    ASSERT_TRUE(
        google::protobuf::TextFormat::ParseFromString(head + rest, &set));
    EXPECT_FALSE(JudgeClaimSet(set, tables).ok()) << rest;
  }
}

// A whole base model not run (a user's pretrained model replaces both of
// ours): every claim filtered to it is NOT TESTABLE, the other base's judged.
TEST(ClaimSet, FiltersNotRunMakeTheirClaimsNotTestable) {
  ClaimSet set;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(
      "experiment: 'x' "
      "claims { id: 'gelu' table: 't.csv' arm_column: 'arm' a: 'new' b: 'old' "
      "where { column: 'base' value: 'gelu' } metric: 'f1' "
      "better: HIGHER_IS_BETTER comparison: BETTER smallest_effect: 0.01 "
      "smallest_effect_reason: 'r' no_control_reason: 'n' } "
      "claims { id: 'swiglu' table: 't.csv' arm_column: 'arm' a: 'new' "
      "b: 'old' where { column: 'base' value: 'swiglu' } metric: 'f1' "
      "better: HIGHER_IS_BETTER comparison: BETTER smallest_effect: 0.01 "
      "smallest_effect_reason: 'r' no_control_reason: 'n' }",
      &set));
  const Tables tables = OneTable(
      "base,arm,seed,f1\ngelu,new,1,0.6\ngelu,new,2,0.62\ngelu,new,3,0.61\n"
      "gelu,old,1,0.5\ngelu,old,2,0.51\ngelu,old,3,0.49\n");
  EXPECT_FALSE(JudgeClaimSet(set, tables).ok());
  auto results = JudgeClaimSet(set, tables, {"base=swiglu"});
  ASSERT_TRUE(results.ok()) << results.status();
  EXPECT_EQ((*results)[0].verdict, Verdict::kHolds);
  EXPECT_EQ((*results)[1].verdict, Verdict::kNotTestable);
  EXPECT_EQ((*results)[1].reason, "base=swiglu is not run in this build");
  // Listed but present is a mistake, as for an arm.
  auto present = JudgeClaimSet(set, tables, {"base=swiglu", "base=gelu"});
  ASSERT_FALSE(present.ok());
  EXPECT_NE(present.status().message().find(
                "'base=gelu' is listed as not run but has rows"),
            std::string::npos)
      << present.status();
}

TEST(ClaimSet, ArmsNotRunMakeTheirClaimsNotTestableAndCatchTypos) {
  ClaimSet set;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(
      "experiment: 'x' "
      "controls { id: 'skip_beats_random' table: 't.csv' arm_column: 'arm' "
      "a: 'skip' b: 'random_skip' metric: 'f1' better: HIGHER_IS_BETTER "
      "comparison: BETTER } "
      "claims { id: 'new_beats_old' table: 't.csv' arm_column: 'arm' a: 'new' "
      "b: 'old' metric: 'f1' better: HIGHER_IS_BETTER comparison: BETTER "
      "smallest_effect: 0.01 smallest_effect_reason: 'r' no_control_reason: "
      "'n' } "
      "claims { id: 'new_beats_skip' table: 't.csv' arm_column: 'arm' "
      "a: 'new' b: 'skip' metric: 'f1' better: HIGHER_IS_BETTER "
      "comparison: BETTER controls: 'skip_beats_random' smallest_effect: 0.01 "
      "smallest_effect_reason: 'r' } "
      "claims { id: 'new_keeps_gain' table: 't.csv' arm_column: 'arm' "
      "a: 'new' b: 'old' baseline: 'chance' metric: 'f1' "
      "better: HIGHER_IS_BETTER effect: GAIN_RATIO comparison: NOT_WORSE "
      "tolerance: 0.5 no_control_reason: 'n' }",
      &set));
  // The arm `skip` and its random initialisation are not trained at this
  // scale: they have no rows.
  const Tables tables = OneTable(
      "arm,seed,f1\nnew,1,0.6\nnew,2,0.62\nnew,3,0.61\n"
      "old,1,0.5\nold,2,0.51\nold,3,0.49\nrandom,1,0.1\nrandom,2,0.1\n"
      "random,3,0.1\n");
  // Without the list, the missing arm is an error, not a verdict.
  EXPECT_FALSE(JudgeClaimSet(set, tables).ok());
  auto results = JudgeClaimSet(set, tables, {"skip", "random_skip", "chance"});
  ASSERT_TRUE(results.ok()) << results.status();
  ASSERT_EQ(results->size(), 4u);
  EXPECT_EQ((*results)[0].verdict, Verdict::kNotTestable);
  EXPECT_EQ((*results)[0].reason, "arm skip is not run at this scale");
  EXPECT_NE(RenderVerdict((*results)[0])
                .find("f1[skip] - f1[random_skip]: not measured. Not "
                      "testable: arm skip is not run at this scale."),
            std::string::npos)
      << RenderVerdict((*results)[0]);
  EXPECT_EQ((*results)[1].verdict, Verdict::kHolds);
  EXPECT_EQ((*results)[2].verdict, Verdict::kNotTestable);
  // A GAIN_RATIO whose control arm is not run.
  EXPECT_EQ((*results)[3].verdict, Verdict::kNotTestable);
  EXPECT_EQ((*results)[3].reason, "arm chance is not run at this scale");
  // An arm listed but trained, or named by no claim, is a mistake.
  auto trained =
      JudgeClaimSet(set, tables, {"skip", "random_skip", "chance", "old"});
  ASSERT_FALSE(trained.ok());
  EXPECT_NE(trained.status().message().find(
                "'old' is listed as not run but has rows"),
            std::string::npos)
      << trained.status();
  auto typo =
      JudgeClaimSet(set, tables, {"skip", "random_skip", "chance", "skpi"});
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.status().message().find(
                "'skpi' is listed as not run but no claim names it"),
            std::string::npos)
      << typo.status();
}

TEST(ClaimsEngine, UnbracketedOptimumIsNotTestable) {
  const std::string claim =
      "id: 'c' table: 't.csv' arm_column: 'arm' a: 'new' b: 'old' metric: "
      "'loss' better: LOWER_IS_BETTER "
      "comparison: BETTER average_over: 'size' "
      "preconditions { kind: INTERIOR_OPTIMUM group_by: 'arm' over: 'size' "
      "metric: 'loss' "
      "  better: LOWER_IS_BETTER }";
  // "new" is best at its smallest size: the optimum is not bracketed.
  const std::string edge =
      "arm,size,seed,loss\n"
      "new,1,1,1.0\nnew,2,1,1.2\nnew,4,1,1.5\nnew,1,2,1.1\nnew,2,2,1.3\nnew,4,"
      "2,1.6\n"
      "old,1,1,2.0\nold,2,1,1.8\nold,4,1,1.9\nold,1,2,2.1\nold,2,2,1.7\nold,4,"
      "2,2.0\n";
  const ClaimResult r = Judge(claim, edge);
  EXPECT_EQ(r.verdict, Verdict::kNotTestable);
  EXPECT_NE(r.reason.find("1 of 2 curves: new"), std::string::npos) << r.reason;
  // Both optima interior: the claim is judged.
  const std::string interior =
      "arm,size,seed,loss\n"
      "new,1,1,1.3\nnew,2,1,1.0\nnew,4,1,1.5\nnew,1,2,1.4\nnew,2,2,1.1\nnew,4,"
      "2,1.6\n"
      "old,1,1,2.0\nold,2,1,1.8\nold,4,1,1.9\nold,1,2,2.1\nold,2,2,1.7\nold,4,"
      "2,2.0\n";
  EXPECT_NE(Judge(claim, interior).verdict, Verdict::kNotTestable);
}

TEST(ClaimsEngine, WithinTolerance) {
  const std::string claim =
      "id: 'c' table: 't.csv' arm_column: 'arm' a: 'new' b: 'old' metric: 'f1' "
      "comparison: WITHIN "
      "tolerance: 0.05";
  EXPECT_EQ(Judge(claim,
                  "arm,seed,f1\nnew,1,0.50\nnew,2,0.51\nnew,3,0.50\nold,1,0."
                  "51\nold,2,0.51\nold,3,0.50\n")
                .verdict,
            Verdict::kHolds);
  EXPECT_EQ(Judge(claim,
                  "arm,seed,f1\nnew,1,0.30\nnew,2,0.31\nnew,3,0.30\nold,1,0."
                  "51\nold,2,0.51\nold,3,0.50\n")
                .verdict,
            Verdict::kDoesNotHold);
  // Noisy: the interval straddles the band's edge.
  EXPECT_EQ(Judge(claim,
                  "arm,seed,f1\nnew,1,0.40\nnew,2,0.55\nnew,3,0.45\nold,1,0."
                  "50\nold,2,0.50\nold,3,0.50\n")
                .verdict,
            Verdict::kUnresolved);
}

TEST(ClaimsEngine, NotWorseIsOneSided) {
  const std::string claim =
      "id: 'c' table: 't.csv' arm_column: 'arm' a: 'new' b: 'old' metric: "
      "'f1' better: HIGHER_IS_BETTER comparison: NOT_WORSE tolerance: 0.05";
  // Much better than B: not worse (WITHIN would say DOES NOT HOLD).
  EXPECT_EQ(Judge(claim,
                  "arm,seed,f1\nnew,1,0.70\nnew,2,0.71\nnew,3,0.70\nold,1,0."
                  "51\nold,2,0.51\nold,3,0.50\n")
                .verdict,
            Verdict::kHolds);
  // Clearly worse by more than the tolerance.
  EXPECT_EQ(Judge(claim,
                  "arm,seed,f1\nnew,1,0.30\nnew,2,0.31\nnew,3,0.30\nold,1,0."
                  "51\nold,2,0.51\nold,3,0.50\n")
                .verdict,
            Verdict::kDoesNotHold);
  // Worse by about the tolerance, noisily.
  EXPECT_EQ(Judge(claim,
                  "arm,seed,f1\nnew,1,0.40\nnew,2,0.50\nnew,3,0.45\nold,1,0."
                  "50\nold,2,0.50\nold,3,0.50\n")
                .verdict,
            Verdict::kUnresolved);
}

TEST(ClaimsEngine, MonotoneOnLogScale) {
  // The gap grows by 0.1 per doubling of k: slope 0.1 on log2(k), exactly.
  const std::string claim =
      std::string(kArms) + "comparison: MONOTONE over: 'k' log_over: true";
  std::string csv = "arm,k,seed,loss\n";
  for (int seed = 1; seed <= 3; ++seed) {
    for (int k : {2, 4, 8, 16}) {
      const double gap =
          (-0.1 + 0.001 * (seed - 2)) * std::log2(k) - 0.01 * seed;
      csv += "new," + std::to_string(k) + "," + std::to_string(seed) + "," +
             std::to_string(1.0 + gap) + "\n";
      csv += "old," + std::to_string(k) + "," + std::to_string(seed) + ",1\n";
    }
  }
  const ClaimResult r = Judge(claim, csv);
  EXPECT_NEAR(r.levels[0].effect.estimate, -0.1, 1e-6);
  EXPECT_EQ(r.verdict, Verdict::kHolds);
}

TEST(ClaimsEngine, ClaimedMagnitude) {
  const std::string claim = kBetter +
                            " effect: RELATIVE_DIFFERENCE paper_effect: -0.117 "
                            "magnitude_claimed: true";
  // -2% +- a little: better than B, but wholly short of the paper's -11.7%.
  EXPECT_EQ(Judge(claim,
                  "arm,seed,loss\nnew,1,9.8\nnew,2,9.79\nnew,3,9.81\nold,1,"
                  "10\nold,2,10\nold,3,10\n")
                .verdict,
            Verdict::kDoesNotHold);
  // -20%: beyond the claimed magnitude.
  EXPECT_EQ(Judge(claim,
                  "arm,seed,loss\nnew,1,8\nnew,2,8.1\nnew,3,7.9\nold,1,10\nold,"
                  "2,10\nold,3,10\n")
                .verdict,
            Verdict::kHolds);
}

TEST(ClaimsEngine, EveryLevelMustHold) {
  const std::string claim = kBetter + " over: 'k' quantifier: EVERY";
  const ClaimResult r = Judge(claim,
                              "arm,k,seed,loss\n"
                              "new,2,1,1.0\nnew,2,2,1.1\nnew,2,3,1.05\nold,2,1,"
                              "2.0\nold,2,2,2.1\nold,2,3,2.0\n"
                              "new,8,1,3.0\nnew,8,2,3.1\nnew,8,3,3.05\nold,8,1,"
                              "2.0\nold,8,2,2.1\nold,8,3,2.0\n");
  ASSERT_EQ(r.levels.size(), 2u);
  EXPECT_EQ(r.levels[0].level, "2");
  EXPECT_EQ(r.levels[0].verdict, Verdict::kHolds);
  EXPECT_EQ(r.levels[1].verdict, Verdict::kDoesNotHold);
  EXPECT_EQ(r.verdict, Verdict::kDoesNotHold);
}

TEST(ClaimsEngine, MonotoneSlopeOverSeeds) {
  // The gap new - old grows more negative with k: slopes -0.1, -0.12, -0.11 per
  // unit of k.
  const std::string claim =
      std::string(kArms) + "comparison: MONOTONE over: 'k'";
  const ClaimResult r = Judge(claim,
                              "arm,k,seed,loss\n"
                              "new,1,1,1.0\nnew,1,2,1.0\nnew,1,3,1.0\nnew,3,1,"
                              "0.8\nnew,3,2,0.76\nnew,3,3,0.78\n"
                              "old,1,1,1.0\nold,1,2,1.0\nold,1,3,1.0\nold,3,1,"
                              "1.0\nold,3,2,1.0\nold,3,3,1.0\n");
  EXPECT_EQ(r.levels[0].method, IntervalMethod::kSlopeT);
  EXPECT_NEAR(r.levels[0].effect.estimate, -0.11, 1e-12);
  EXPECT_EQ(r.verdict, Verdict::kHolds);
}

TEST(ClaimsEngine, CorrelationIsOverSeedsNotLevels) {
  const std::string claim =
      "id: 'c' table: 't.csv' arm_column: 'arm' a: 'lorsa' b: 'sae' metric: "
      "'fvu' comparison: CORRELATION over: 'block'";
  // One seed: its r = 0.8 over 4 blocks is one observation, no interval (the
  // old rule took Fisher z over the 4 blocks as if they were replicates).
  const std::string one_seed =
      "arm,block,seed,fvu\nlorsa,0,1,1\nlorsa,1,1,2\nlorsa,2,1,3\nlorsa,3,1,4\n"
      "sae,0,1,1\nsae,1,1,3\nsae,2,1,2\nsae,3,1,4\n";
  const ClaimResult few = Judge(claim, one_seed);
  EXPECT_NEAR(few.levels[0].effect.estimate, 0.8, 1e-9);
  EXPECT_EQ(few.levels[0].effect.n, 1);
  EXPECT_EQ(few.verdict, Verdict::kUnresolved);
  // Three seeds with r = 0.8, 0.4, 0.6 (SAE values permuted per seed): the t
  // interval of their Fisher z over seeds, back through tanh.
  std::string csv = "arm,block,seed,fvu\n";
  const int sae[3][4] = {{1, 3, 2, 4}, {2, 3, 1, 4}, {2, 1, 4, 3}};
  for (int seed = 1; seed <= 3; ++seed) {
    for (int b = 0; b < 4; ++b) {
      absl::StrAppend(&csv, "lorsa,", b, ",", seed, ",", b + 1, "\n", "sae,", b,
                      ",", seed, ",", sae[seed - 1][b], "\n");
    }
  }
  const ClaimResult r = Judge(claim, csv);
  const std::vector<double> z = {std::atanh(0.8), std::atanh(0.4),
                                 std::atanh(0.6)};
  const Interval zi = MeanInterval(z, kConfidence);
  EXPECT_EQ(r.levels[0].effect.n, 3);
  EXPECT_NEAR(r.levels[0].effect.estimate, std::tanh(zi.estimate), 1e-9);
  EXPECT_NEAR(r.levels[0].effect.low, std::tanh(zi.low), 1e-9);
  EXPECT_NEAR(r.levels[0].effect.high, std::tanh(zi.high), 1e-9);
  EXPECT_EQ(r.verdict, zi.low > 0 ? Verdict::kHolds : Verdict::kUnresolved);
}

TEST(ClaimsEngine, AgainstAnotherColumnOfTheSameRows) {
  // A fit's CE against the same rows' zero-ablated CE (b_metric).
  const std::string claim =
      "id: 'c' table: 't.csv' arm_column: 'method' a: 'mxd' metric: 'ce' "
      "b_metric: 'ce_zero' "
      "better: LOWER_IS_BETTER comparison: BETTER";
  const ClaimResult r = Judge(
      claim,
      "method,seed,ce,ce_zero\nmxd,1,4.0,4.5\nmxd,2,4.1,4.5\nmxd,3,4.05,4.5\n");
  EXPECT_NEAR(r.levels[0].effect.estimate, -0.45, 1e-12);
  EXPECT_EQ(r.verdict, Verdict::kHolds);
}

TEST(ClaimsEngine, AmbiguousRowsAreAnError) {
  // Two rows for one seed of one arm (another base model, say) must not be
  // averaged silently.
  Claim claim = ParseClaim(kBetter);
  const Tables tables = OneTable(
      "arm,base,seed,loss\nnew,a,1,1\nnew,b,1,2\nold,a,1,1\nold,b,1,2\n");
  auto r = JudgeClaim(claim, false, tables, {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("several rows"), std::string::npos)
      << r.status();
  claim.add_average_over("base");
  EXPECT_TRUE(JudgeClaim(claim, false, tables, {}).ok());
}

TEST(ClaimSet, ValidationNamesTheProblem) {
  ClaimSet set;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(
      "experiment: 'x' claims { id: 'c' table: 't.csv' arm_column: 'arm' a: "
      "'new' b: 'old' metric: 'nope' "
      "better: LOWER_IS_BETTER comparison: BETTER smallest_effect: 0.01 "
      "smallest_effect_reason: 'r' no_control_reason: 'n' }",
      &set));
  const Tables tables = OneTable("arm,seed,loss\nnew,1,1\nold,1,2\n");
  const absl::Status status = ValidateClaimSet(set, tables);
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("no column 'nope'"), std::string::npos)
      << status;
  set.mutable_claims(0)->set_metric("loss");
  set.mutable_claims(0)->clear_no_control_reason();
  set.mutable_claims(0)->add_controls("undefined");
  EXPECT_NE(ValidateClaimSet(set, tables).message().find("control 'undefined'"),
            std::string::npos);
}

TEST(Renderer, VerdictLineCarriesEffectIntervalAndN) {
  const ClaimResult r =
      Judge(kBetter + " source: 'Paper Fig. 1' statement: 'new beats old'",
            "arm,seed,loss\nnew,1,1.0\nnew,2,1.4\nnew,3,0.95\nold,1,1.5\nold,2,"
            "2.0\nold,3,1.5\n");
  const std::string line = RenderVerdict(r);
  EXPECT_NE(line.find("c (Paper Fig. 1): new beats old → **HOLDS**"),
            std::string::npos)
      << line;
  EXPECT_NE(line.find("loss[new] - loss[old] = -0.55, 95% CI [-0.6742, "
                      "-0.4258], n = 3 seeds (paired t)"),
            std::string::npos)
      << line;
}

// Issue 44: design statements apart, simultaneous intervals, one unit of
// replication, the seed plan. Each test below failed on the engine before it.

// A value every seed shares (a design statement, or a control reading the one
// base LM) prints without a zero-width "95% CI", which would read as noise.
void ExpectValueWithoutInterval(const ClaimResult& result) {
  const std::string line = RenderVerdict(result);
  EXPECT_NE(line.find("-1, the same in every seed (one fixed model, no "
                      "interval), n = 2 seeds"),
            std::string::npos)
      << line;
  EXPECT_EQ(line.find("CI ["), std::string::npos) << line;
}

TEST(Basis, ADesignStatementThatVariesBetweenSeedsIsAnError) {
  const Claim claim = ParseClaim(
      kBetter + " basis: BY_DESIGN design_reason: 'the config fixes it'");
  auto varies = JudgeClaim(
      claim, false,
      OneTable("arm,seed,loss\nnew,1,1.0\nnew,2,1.1\nold,1,2.0\nold,2,2.0\n"),
      {});
  ASSERT_FALSE(varies.ok());
  EXPECT_NE(varies.status().message().find("BY_DESIGN but its effect differs"),
            std::string::npos)
      << varies.status();
  auto fixed = JudgeClaim(
      claim, false,
      OneTable("arm,seed,loss\nnew,1,1.0\nnew,2,1.0\nold,1,2.0\nold,2,2.0\n"),
      {});
  ASSERT_TRUE(fixed.ok()) << fixed.status();
  EXPECT_EQ(fixed->verdict, Verdict::kHolds);
  ExpectValueWithoutInterval(*fixed);
}

TEST(Basis, ADesignStatementThatDoesNotHoldIsAnError) {
  // A stale width in a config (the cpu Lorsa SAE of 2026-11-28) used to read
  // DOES NOT HOLD among the design statements while every claim on it was
  // judged.
  const Claim claim = ParseClaim(
      kBetter + " basis: BY_DESIGN design_reason: 'the config fixes it'");
  auto broken = JudgeClaim(
      claim, false,
      OneTable("arm,seed,loss\nnew,1,3.0\nnew,2,3.0\nold,1,2.0\nold,2,2.0\n"),
      {});
  ASSERT_FALSE(broken.ok());
  EXPECT_NE(
      broken.status().message().find("claim c is BY_DESIGN and does not hold"),
      std::string::npos)
      << broken.status();
}

TEST(Basis, ALevelWhoseSeedsAgreeIsNotTestableItself) {
  // The claim read NOT TESTABLE, but its level rows kept HOLDS on zero-width
  // intervals (slimpajama_isoflop's F3_optimal_size_* at a3ceebe).
  const ClaimResult r = Judge(kBetter + " over: 'k' quantifier: EVERY",
                              "arm,k,seed,loss\n"
                              "new,1,1,1.0\nnew,1,2,1.0\nnew,1,3,1.0\n"
                              "old,1,1,2.0\nold,1,2,2.0\nold,1,3,2.0\n"
                              "new,2,1,1.0\nnew,2,2,1.01\nnew,2,3,0.99\n"
                              "old,2,1,2.0\nold,2,2,2.0\nold,2,3,2.0\n");
  EXPECT_EQ(r.verdict, Verdict::kNotTestable);
  ASSERT_EQ(r.levels.size(), 2u);
  EXPECT_TRUE(r.levels[0].no_spread);
  EXPECT_EQ(r.levels[0].verdict, Verdict::kNotTestable);
  // A level with spread keeps its own verdict.
  EXPECT_EQ(r.levels[1].verdict, Verdict::kHolds);
}

TEST(Basis, AnEmpiricalClaimWhoseSeedsAgreeIsNotTestable) {
  // A zero-width interval used to read HOLDS without any noise estimate.
  const ClaimResult r = Judge(
      kBetter, "arm,seed,loss\nnew,1,1.0\nnew,2,1.0\nold,1,2.0\nold,2,2.0\n");
  EXPECT_EQ(r.verdict, Verdict::kNotTestable);
  EXPECT_NE(r.reason.find("every seed gives the same effect"),
            std::string::npos)
      << r.reason;
  // Unpaired arms that are each constant: Welch's se is 0 too.
  const ClaimResult welch = Judge(
      kBetter, "arm,seed,loss\nnew,1,1.0\nnew,2,1.0\nold,3,2.0\nold,4,2.0\n");
  EXPECT_EQ(welch.levels[0].method, IntervalMethod::kWelchT);
  EXPECT_EQ(welch.verdict, Verdict::kNotTestable);
  // A control may read one fixed model that every seed shares (the base LM):
  // it is judged on its value.
  Claim control = ParseClaim(kBetter);
  auto fixed = JudgeClaim(
      control, true,
      OneTable("arm,seed,loss\nnew,1,1.0\nnew,2,1.0\nold,1,2.0\nold,2,2.0\n"),
      {});
  ASSERT_TRUE(fixed.ok()) << fixed.status();
  EXPECT_EQ(fixed->verdict, Verdict::kHolds);
  ExpectValueWithoutInterval(*fixed);
}

TEST(Basis, DesignStatementsAreListedApartAndNeverCounted) {
  const ClaimSet set = ParseSet(
      "experiment: 'x' "
      "claims { id: 'd' table: 't.csv' arm_column: 'arm' a: 'new' b: 'old' "
      "  metric: 'params' better: HIGHER_IS_BETTER comparison: BETTER "
      "  basis: BY_DESIGN design_reason: 'width 2x' } "
      "claims { id: 'e' table: 't.csv' arm_column: 'arm' a: 'new' b: 'old' "
      "  metric: 'loss' better: LOWER_IS_BETTER comparison: BETTER "
      "  smallest_effect: 0.1 smallest_effect_reason: 'r' "
      "  no_control_reason: 'none' }");
  const Tables tables = OneTable(
      "arm,seed,params,loss\nnew,1,20,1.0\nnew,2,20,1.4\nnew,3,20,0.95\n"
      "old,1,10,1.5\nold,2,10,2.0\nold,3,10,1.5\n");
  auto results = JudgeClaimSet(set, tables);
  ASSERT_TRUE(results.ok()) << results.status();
  const TidyTable verdicts = VerdictsTable("x", *results);
  EXPECT_NE(verdicts.ToCsv().find("x,design,d,"), std::string::npos);
  auto summary = SummarizeVerdicts({verdicts});
  ASSERT_TRUE(summary.ok()) << summary.status();
  // One empirical claim (HOLDS), judged; the design statement apart.
  EXPECT_NE(summary->find("| [x](#x) | 1 | 0 | 0 | 0 | 0 / 0 | 1 | 0.05 | 1 |"),
            std::string::npos)
      << *summary;
  auto section = RenderSection(set, tables, *results, {});
  ASSERT_TRUE(section.ok()) << section.status();
  EXPECT_NE(section->find("## Checked by construction"), std::string::npos);
  EXPECT_NE(section->find("1 empirical claims judged"), std::string::npos)
      << *section;
  auto checked = VerifyVerdicts(set, verdicts, 2);
  EXPECT_TRUE(checked.ok()) << checked.status();
}

TEST(Bonferroni, FiveLevelsHaveSimultaneousIntervals) {
  // At each k the paired differences are -3, -4, -5 (mean -4, s 1): the
  // interval is -4 +- t_{1 - 0.01/2, 2} / sqrt(3) = -4 +- 9.9248 / sqrt(3)
  // (each level at 99%), where a per-level 95% interval was -4 +- 4.3027 /
  // sqrt(3) and excluded zero.
  std::string csv = "arm,seed,k,loss\n";
  for (int k = 1; k <= 5; ++k) {
    for (int seed = 1; seed <= 3; ++seed) {
      absl::StrAppend(&csv, "new,", seed, ",", k, ",", 8 - seed, "\n", "old,",
                      seed, ",", k, ",10\n");
    }
  }
  const ClaimResult r = Judge(kBetter + " over: 'k' quantifier: EVERY", csv);
  ASSERT_EQ(r.levels.size(), 5u);
  for (const LevelResult& level : r.levels) {
    EXPECT_EQ(level.family_size, 5);
    EXPECT_NEAR(level.confidence, 0.99, 1e-12);
    EXPECT_NEAR(level.effect.low, -4 - 9.924843 / std::sqrt(3.0), 1e-5);
    EXPECT_NEAR(level.effect.high, -4 + 9.924843 / std::sqrt(3.0), 1e-5);
    EXPECT_EQ(level.verdict, Verdict::kUnresolved);
  }
  EXPECT_EQ(r.verdict, Verdict::kUnresolved);
  EXPECT_NE(RenderVerdict(r).find("99% CI ["), std::string::npos)
      << RenderVerdict(r);
  // One level alone keeps its 95% interval, which excludes zero.
  const ClaimResult one =
      Judge(kBetter + " where { column: 'k' value: '1' }", csv);
  EXPECT_NEAR(one.levels[0].effect.high, -4 + 4.302653 / std::sqrt(3.0), 1e-5);
  EXPECT_EQ(one.verdict, Verdict::kHolds);
}

TEST(Replicates, AClaimOverTokensIsRejected) {
  ClaimSet set = ParseSet(
      "experiment: 'x' "
      "controls { id: 'c' table: 't.csv' a: 'x' metric: 'loss' "
      "  better: LOWER_IS_BETTER comparison: BETTER seed_column: 'token_id' }");
  const Tables tables = OneTable("token_id,seed,loss\n1,1,1\n2,1,2\n3,1,1.5\n");
  const absl::Status status = ValidateClaimSet(set, tables);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("not declared an independent replicate"),
            std::string::npos)
      << status;
  // Declared as indexing independent trainings, it is accepted.
  set.add_independent_replicates("token_id");
  EXPECT_TRUE(ValidateClaimSet(set, tables).ok());
}

TEST(MinSeeds, CountsEveryComparedArm) {
  // A has 3 seeds, B only 2: the comparison rests on 2.
  const std::string claim =
      kBetter + " preconditions { kind: MIN_SEEDS min_seeds: 3 why: 'noise' }";
  const ClaimResult r = Judge(claim,
                              "arm,seed,loss\nnew,1,1.0\nnew,2,1.1\nnew,3,0.9\n"
                              "old,1,2.0\nold,2,2.2\n");
  EXPECT_EQ(r.verdict, Verdict::kNotTestable);
  EXPECT_NE(r.reason.find("n = 2 seeds, fewer than 3"), std::string::npos)
      << r.reason;
}

TEST(MinSeeds, AClaimWhoseLevelsWereAllLeftOutIsNotTestable) {
  // A gap table whose every level fell outside the frontier has no rows: with
  // MIN_SEEDS saying why it reads NOT TESTABLE, without it is an error.
  const std::string over = kBetter +
                           " over: 'k' quantifier: EVERY where { column: 'arm' "
                           "values: ['new', 'old'] }";
  const std::string empty = "arm,seed,k,loss\nother,1,2,1.0\n";
  const ClaimResult r =
      Judge(over +
                " preconditions { kind: MIN_SEEDS min_seeds: 1 why: 'every "
                "fit outside the range' }",
            empty);
  EXPECT_EQ(r.verdict, Verdict::kNotTestable);
  EXPECT_NE(r.reason.find("n = 0 seeds, fewer than 1 (every fit outside the "
                          "range)"),
            std::string::npos)
      << r.reason;
  Claim claim = ParseClaim(over);
  const auto error = JudgeClaim(claim, false, OneTable(empty), {});
  ASSERT_FALSE(error.ok());
  EXPECT_NE(error.status().message().find("no rows"), std::string::npos);
  // A failed control is no reason: an empty claim behind it is still an error
  // (a mistyped filter must not read NOT TESTABLE).
  Claim gated = ParseClaim(over + " controls: 'ctrl'");
  const auto still = JudgeClaim(gated, false, OneTable(empty),
                                {{"ctrl", Verdict::kDoesNotHold}});
  EXPECT_FALSE(still.ok());
}

TEST(SeedPlan, FewerSeedsThanPlannedAreUnderpowered) {
  const ClaimResult r =
      Judge(kBetter + " seeds_needed: 4",
            "arm,seed,loss\nnew,1,1.0\nnew,2,1.4\nnew,3,0.95\n"
            "old,1,1.5\nold,2,2.0\nold,3,1.5\n");
  EXPECT_EQ(r.verdict, Verdict::kNotTestable);
  EXPECT_NE(r.reason.find("underpowered: the seed plan needs n = 4"),
            std::string::npos)
      << r.reason;
  // The effect is still shown.
  EXPECT_NEAR(r.levels[0].effect.estimate, -0.55, 1e-12);
}

TEST(NotTestableReason, IsTheVerdictWithTheEffectShown) {
  const ClaimResult r =
      Judge(kBetter + " not_testable_reason: 'holds at initialisation'",
            "arm,seed,loss\nnew,1,1.0\nnew,2,1.4\nnew,3,0.95\n"
            "old,1,1.5\nold,2,2.0\nold,3,1.5\n");
  EXPECT_EQ(r.verdict, Verdict::kNotTestable);
  EXPECT_EQ(r.reason, "holds at initialisation");
  EXPECT_NEAR(r.levels[0].effect.estimate, -0.55, 1e-12);
}

TEST(Welch, ARelativeEffectCarriesBsUncertainty) {
  // A = {8, 10, 12} (seeds 1-3), B = {4, 5, 6} (seeds 4-6): 10 / 5 - 1 = 1.
  // Delta method: var(mean A) / 25 + 100 var(mean B) / 625 = 0.0533 + 0.0533
  // on Welch-Satterthwaite's df = 4; the old rule, the difference's interval
  // over B's mean, had var (4/3 + 1/3) / 25 = 0.0667 as if B's mean were exact.
  const ClaimResult r = Judge(kBetter + " effect: RELATIVE_DIFFERENCE",
                              "arm,seed,loss\nnew,1,8\nnew,2,10\nnew,3,12\n"
                              "old,4,4\nold,5,5\nold,6,6\n");
  ASSERT_EQ(r.levels[0].method, IntervalMethod::kWelchT);
  const double half =
      StudentTQuantile(0.975, 4.0) * std::sqrt(4.0 / 75 + 4.0 / 75);
  EXPECT_NEAR(r.levels[0].effect.estimate, 1.0, 1e-12);
  EXPECT_NEAR(r.levels[0].effect.low, 1.0 - half, 1e-9);
  EXPECT_NEAR(r.levels[0].effect.high, 1.0 + half, 1e-9);
  const Interval welch = WelchInterval({8, 10, 12}, {4, 5, 6}, kConfidence);
  EXPECT_GT(half, (welch.high - welch.estimate) / 5 + 0.05);
}

TEST(Pooled, EachSeedAveragesTheSameLevels) {
  // Seed 3 has no row at k = 2: it would average only k = 1, where both arms
  // are far apart; it is left out, not pooled over fewer levels.
  const std::string claim = kBetter + " over: 'k' quantifier: POOLED";
  const ClaimResult r =
      Judge(claim,
            "arm,seed,k,loss\n"
            "new,1,1,1.0\nnew,1,2,2.0\nold,1,1,1.2\nold,1,2,2.1\n"
            "new,2,1,1.1\nnew,2,2,2.0\nold,2,1,1.2\nold,2,2,2.2\n"
            "new,3,1,0.0\nold,3,1,5.0\n");
  EXPECT_EQ(r.levels[0].effect.n, 2);
  EXPECT_NEAR(r.levels[0].effect.estimate, (-0.15 + -0.15) / 2, 1e-12);
}

TEST(ZeroBaseline, ARelativeEffectOverZeroIsUndefinedOnEveryPath) {
  const std::string relative = kBetter + " effect: RELATIVE_DIFFERENCE";
  // Paired: B is 0 in seed 2.
  EXPECT_TRUE(std::isnan(Judge(relative,
                               "arm,seed,loss\nnew,1,1\nnew,2,1\nnew,3,2\n"
                               "old,1,2\nold,2,0\nold,3,3\n")
                             .levels[0]
                             .effect.estimate));
  // Welch: B's mean is 0.
  const ClaimResult welch =
      Judge(relative, "arm,seed,loss\nnew,1,1\nnew,2,2\nold,3,-1\nold,4,1\n");
  EXPECT_TRUE(std::isnan(welch.levels[0].effect.estimate));
  EXPECT_NE(welch.reason.find("undefined"), std::string::npos) << welch.reason;
  // Welch: B's mean is 0.5 but its own interval (t_{.975,1} 1.5) reaches 0.
  EXPECT_TRUE(std::isnan(
      Judge(relative, "arm,seed,loss\nnew,1,1\nnew,2,2\nold,3,-1\nold,4,2\n")
          .levels[0]
          .effect.estimate));
  EXPECT_EQ(welch.verdict, Verdict::kNotTestable);
  // Against a reference value of 0: a validation error, and undefined if
  // judged directly.
  const std::string reference =
      "id: 'c' table: 't.csv' a: 'x' metric: 'loss' better: LOWER_IS_BETTER "
      "comparison: BETTER effect: RELATIVE_DIFFERENCE reference_value: 0 "
      "smallest_effect: 0.1 smallest_effect_reason: 'r' no_control_reason: 'n'";
  const ClaimResult one = Judge(reference, "seed,loss\n1,1\n2,2\n3,3\n");
  EXPECT_TRUE(std::isnan(one.levels[0].effect.estimate));
  EXPECT_EQ(one.verdict, Verdict::kNotTestable);
  ClaimSet set = ParseSet("experiment: 'x'");
  *set.add_claims() = ParseClaim(reference);
  EXPECT_NE(ValidateClaimSet(set, OneTable("seed,loss\n1,1\n"))
                .message()
                .find("reference_value 0 is undefined"),
            std::string::npos);
  // MONOTONE: B is 0 at one level of seed 1.
  const ClaimResult slope =
      Judge(std::string(kArms) +
                "effect: RELATIVE_DIFFERENCE comparison: MONOTONE over: 'k'",
            "arm,seed,k,loss\nnew,1,1,1\nnew,1,2,2\nold,1,1,0\nold,1,2,3\n"
            "new,2,1,1\nnew,2,2,2\nold,2,1,2\nold,2,2,3\n");
  EXPECT_TRUE(std::isnan(slope.levels[0].effect.estimate));
  EXPECT_TRUE(std::isinf(slope.levels[0].effect.low));
  EXPECT_EQ(slope.verdict, Verdict::kNotTestable);
  // POOLED: B's mean over levels is 0 in seed 1.
  const ClaimResult pooled =
      Judge(relative + " over: 'k' quantifier: POOLED",
            "arm,seed,k,loss\nnew,1,1,1\nnew,1,2,2\nold,1,1,-1\nold,1,2,1\n"
            "new,2,1,1\nnew,2,2,2\nold,2,1,2\nold,2,2,3\n");
  EXPECT_TRUE(std::isnan(pooled.levels[0].effect.estimate));
}

TEST(ClaimSet, AnEmpiricalClaimNamesAControlAndItsSmallestEffect) {
  ClaimSet set = ParseSet(
      "experiment: 'x' claims { id: 'c' table: 't.csv' arm_column: 'arm' "
      "a: 'new' b: 'old' metric: 'loss' better: LOWER_IS_BETTER "
      "comparison: BETTER smallest_effect: 0.1 smallest_effect_reason: 'r' }");
  const Tables tables = OneTable("arm,seed,loss\nnew,1,1\nold,1,2\n");
  EXPECT_NE(ValidateClaimSet(set, tables).message().find("no_control_reason"),
            std::string::npos);
  set.mutable_claims(0)->set_no_control_reason("none applies");
  EXPECT_TRUE(ValidateClaimSet(set, tables).ok());
  set.mutable_claims(0)->clear_smallest_effect();
  EXPECT_NE(ValidateClaimSet(set, tables).message().find("smallest_effect"),
            std::string::npos);
}

TEST(Renderer, SeedPlanAndAmendmentsArePrinted) {
  const ClaimSet set = ParseSet(
      "experiment: 'x' seed_plan: 'pilot: smoke; n = 6' "
      "amendments { date: '2026-11-26' what: 'seeds 4-6 added' "
      "why: 'after looking at C2' }");
  auto section = RenderSection(set, {}, {}, {});
  ASSERT_TRUE(section.ok()) << section.status();
  EXPECT_NE(section->find("Seed plan: pilot: smoke"), std::string::npos);
  EXPECT_NE(section->find("- 2026-11-26: seeds 4-6 added Why: after looking"),
            std::string::npos)
      << *section;
  ClaimSet bad = set;
  bad.mutable_amendments(0)->clear_why();
  EXPECT_FALSE(ValidateClaimSet(bad, {}).ok());
}

}  // namespace
}  // namespace sparse_layers::claims
