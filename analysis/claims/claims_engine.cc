#include "analysis/claims/claims_engine.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/common/status_macros.h"

namespace sparse_layers::claims {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

absl::StatusOr<const TidyTable*> FindTable(const Tables& tables,
                                           const std::string& name,
                                           const std::string& who) {
  auto it = tables.find(name);
  if (it == tables.end()) {
    std::vector<std::string> names;
    for (const auto& [n, t] : tables) names.push_back(n);
    return absl::NotFoundError(
        absl::StrCat(who, ": no table '", name,
                     "' (tables: ", absl::StrJoin(names, ","), ")"));
  }
  return &it->second;
}

// An effect that cannot be estimated (a relative effect over B = 0): no
// estimate and an unbounded interval, so every verdict reads UNRESOLVED.
Interval Undefined(int n) {
  Interval out;
  out.estimate = std::numeric_limits<double>::quiet_NaN();
  out.low = -std::numeric_limits<double>::infinity();
  out.high = std::numeric_limits<double>::infinity();
  out.n = n;
  return out;
}

bool AllFinite(const std::vector<double>& values) {
  for (double v : values) {
    if (!std::isfinite(v)) return false;
  }
  return true;
}

// Per-seed effect of a against b under `effect`.
double EffectOf(double a, double b, Effect effect) {
  return effect == RELATIVE_DIFFERENCE ? a / b - 1.0 : a - b;
}

bool IsNumber(const std::string& text) {
  double unused;
  return absl::SimpleAtod(text, &unused);
}

// The two sides of a comparison at one level: seed -> value.
struct Sides {
  std::map<std::string, double> a;
  std::map<std::string, double>
      b;  // Empty when comparing against the reference value.
  std::map<std::string, double> baseline;  // GAIN_RATIO's C.
  bool against_reference = false;
};

absl::StatusOr<Sides> CollectSides(const Claim& claim, const TidyTable& table,
                                   const std::string& level) {
  const std::string seed = SeedColumnOrDefault(claim.seed_column());
  Sides sides;
  ASSIGN_OR_RETURN(
      sides.a,
      SeedMeans(table, claim.where(), seed, claim.arm_column(), claim.a(),
                claim.over(), level, claim.metric(), claim.average_over()));
  if (!claim.b_metric().empty() || !claim.b().empty()) {
    const std::string& arm = claim.b().empty() ? claim.a() : claim.b();
    const std::string& metric =
        claim.b_metric().empty() ? claim.metric() : claim.b_metric();
    ASSIGN_OR_RETURN(
        sides.b, SeedMeans(table, claim.where(), seed, claim.arm_column(), arm,
                           claim.over(), level, metric, claim.average_over()));
  } else {
    sides.against_reference = true;
  }
  if (claim.effect() == GAIN_RATIO) {
    ASSIGN_OR_RETURN(sides.baseline,
                     SeedMeans(table, claim.where(), seed, claim.arm_column(),
                               claim.baseline(), claim.over(), level,
                               claim.metric(), claim.average_over()));
  }
  return sides;
}

// GAIN_RATIO: per seed (A - C) / (B - C) - 1, a share that is higher-is-better
// whichever way the metric improves; undefined (no interval) unless A, B and C
// have the same seeds and B beats C (in `better`'s direction) in every seed, so
// a seed where B is at or below chance cannot flip or blow up the ratio.
LevelResult GainRatioInterval(const Claim& claim, const Sides& sides,
                              double confidence) {
  LevelResult out;
  out.method = IntervalMethod::kPairedT;
  out.confidence = confidence;
  const double sign = claim.better() == LOWER_IS_BETTER ? -1.0 : 1.0;
  std::vector<double> per_seed;
  bool defined = sides.a.size() == sides.b.size() &&
                 sides.a.size() == sides.baseline.size();
  for (const auto& [seed, a] : sides.a) {
    auto b = sides.b.find(seed);
    auto c = sides.baseline.find(seed);
    if (b == sides.b.end() || c == sides.baseline.end()) {
      defined = false;
      continue;
    }
    if (sign * (b->second - c->second) <= 0) defined = false;
    per_seed.push_back((a - c->second) / (b->second - c->second) - 1.0);
  }
  out.effect = MeanInterval(per_seed, confidence);
  out.no_spread = NoSpread(per_seed);
  if (!defined || !AllFinite(per_seed))
    out.effect = Undefined(static_cast<int>(per_seed.size()));
  return out;
}

// Mean and interval of the A-against-B effect at `confidence`: one-sample,
// paired or Welch.
LevelResult EffectInterval(const Claim& claim, const Sides& sides,
                           double confidence) {
  LevelResult out;
  out.confidence = confidence;
  const Effect effect =
      claim.effect() == EFFECT_UNSPECIFIED ? DIFFERENCE : claim.effect();
  if (effect == GAIN_RATIO) return GainRatioInterval(claim, sides, confidence);
  const std::vector<double> a_values = SeedValues(sides.a);
  const std::vector<double> b_values = SeedValues(sides.b);
  std::vector<double> paired;
  if (sides.against_reference) {
    for (double a : a_values)
      paired.push_back(EffectOf(a, claim.reference_value(), effect));
    out.effect = MeanInterval(paired, confidence);
    out.method = IntervalMethod::kOneSampleT;
    out.no_spread = NoSpread(paired);
    if (!AllFinite(paired)) out.effect = Undefined(out.effect.n);
    return out;
  }
  bool same_seeds = sides.a.size() == sides.b.size();
  for (const auto& [seed, value] : sides.a) {
    auto it = sides.b.find(seed);
    if (it == sides.b.end()) {
      same_seeds = false;
      break;
    }
    paired.push_back(EffectOf(value, it->second, effect));
  }
  if (same_seeds) {
    out.effect = MeanInterval(paired, confidence);
    out.method = IntervalMethod::kPairedT;
    out.no_spread = NoSpread(paired);
    // A relative effect over a seed whose B is 0 is undefined: no interval.
    if (!AllFinite(paired)) out.effect = Undefined(out.effect.n);
    return out;
  }
  // Unpaired: Welch's interval of the difference; a relative effect's interval
  // carries B's uncertainty too (RatioInterval).
  out.method = IntervalMethod::kWelchT;
  out.no_spread = NoSpread(a_values) && NoSpread(b_values);
  out.effect = effect == RELATIVE_DIFFERENCE
                   ? RatioInterval(a_values, b_values, confidence)
                   : WelchInterval(a_values, b_values, confidence);
  return out;
}

// BETTER: the interval against zero (and the claimed magnitude) on the side
// `better` names.
Verdict BetterVerdict(const Claim& claim, const Interval& e) {
  // A GAIN_RATIO is oriented already (GainRatioInterval).
  const bool lower =
      claim.better() == LOWER_IS_BETTER && claim.effect() != GAIN_RATIO;
  // Orient so that "better" is positive.
  const double low = lower ? -e.high : e.low;
  const double high = lower ? -e.low : e.high;
  if (claim.magnitude_claimed() && claim.has_paper_effect()) {
    const double m = lower ? -claim.paper_effect() : claim.paper_effect();
    if (high < m)
      return Verdict::kDoesNotHold;  // Wholly short of the claimed magnitude.
  }
  if (low > 0) return Verdict::kHolds;
  if (high < 0) return Verdict::kDoesNotHold;
  return Verdict::kUnresolved;
}

// NOT_WORSE: the worse end of the interval against the tolerance.
Verdict NotWorseVerdict(const Claim& claim, const Interval& e) {
  const double tolerance = std::fabs(claim.tolerance());
  const bool lower =
      claim.better() == LOWER_IS_BETTER && claim.effect() != GAIN_RATIO;
  // Orient so that "better" is positive; not worse means above -tolerance.
  const double low = lower ? -e.high : e.low;
  const double high = lower ? -e.low : e.high;
  if (low >= -tolerance) return Verdict::kHolds;
  if (high < -tolerance) return Verdict::kDoesNotHold;
  return Verdict::kUnresolved;
}

Verdict WithinVerdict(const Claim& claim, const Interval& e) {
  const double tolerance = std::fabs(claim.tolerance());
  if (e.low >= -tolerance && e.high <= tolerance) return Verdict::kHolds;
  if (e.low > tolerance || e.high < -tolerance) return Verdict::kDoesNotHold;
  return Verdict::kUnresolved;
}

// Summary of per-level verdicts: every level holds, any level fails, or
// unresolved.
Verdict Every(const std::vector<LevelResult>& levels) {
  bool all_hold = !levels.empty();
  for (const LevelResult& level : levels) {
    if (level.verdict == Verdict::kDoesNotHold) return Verdict::kDoesNotHold;
    if (level.verdict != Verdict::kHolds) all_hold = false;
  }
  return all_hold ? Verdict::kHolds : Verdict::kUnresolved;
}

absl::StatusOr<std::vector<double>> NumericLevels(
    const std::vector<std::string>& levels, const Claim& claim) {
  std::vector<double> out;
  for (const std::string& level : levels) {
    double value;
    if (!absl::SimpleAtod(level, &value)) {
      return absl::InvalidArgumentError(
          absl::StrCat("claim ", claim.id(), ": level '", level, "' of '",
                       claim.over(), "' is not a number"));
    }
    out.push_back(value);
  }
  return out;
}

absl::StatusOr<ClaimResult> JudgeComparison(const Claim& claim,
                                            const TidyTable& table,
                                            ClaimResult result) {
  std::vector<std::string> levels = {""};
  if (!claim.over().empty()) {
    ASSIGN_OR_RETURN(auto found, Levels(table, claim.where(), claim.over()));
    // FailedPrecondition: NOT TESTABLE when one of the claim's preconditions
    // says why (e.g. MIN_SEEDS where every level was left out), else an error.
    if (found.empty())
      return absl::FailedPreconditionError(
          absl::StrCat("claim ", claim.id(), ": no rows"));
    levels = std::move(found);
  }
  auto judge = [&](const Interval& e) {
    if (claim.comparison() == WITHIN) return WithinVerdict(claim, e);
    if (claim.comparison() == NOT_WORSE) return NotWorseVerdict(claim, e);
    return BetterVerdict(claim, e);
  };
  const bool pooled = claim.quantifier() == POOLED && !claim.over().empty();
  if (!pooled) {
    // Simultaneous intervals over the levels (Bonferroni): a claim over L
    // levels errs anywhere with probability at most 5%.
    const int family = static_cast<int>(levels.size());
    const double confidence = 1.0 - (1.0 - kConfidence) / family;
    for (const std::string& level : levels) {
      ASSIGN_OR_RETURN(auto sides, CollectSides(claim, table, level));
      LevelResult level_result = EffectInterval(claim, sides, confidence);
      level_result.family_size = family;
      level_result.level = level;
      level_result.verdict = judge(level_result.effect);
      result.levels.push_back(level_result);
    }
    result.verdict = Every(result.levels);
    return result;
  }
  // POOLED: per seed, the mean over levels of each side, then one interval;
  // only seeds present at every level count, so each seed averages the same
  // levels.
  Sides pooled_sides;
  std::map<std::string, int> a_count, b_count;
  bool level_without_spread = false;
  for (const std::string& level : levels) {
    ASSIGN_OR_RETURN(auto sides, CollectSides(claim, table, level));
    // Pooling must not make spread where a level has none.
    level_without_spread = level_without_spread ||
                           EffectInterval(claim, sides, kConfidence).no_spread;
    pooled_sides.against_reference = sides.against_reference;
    for (const auto& [seed, v] : sides.a)
      pooled_sides.a[seed] += v, ++a_count[seed];
    for (const auto& [seed, v] : sides.b)
      pooled_sides.b[seed] += v, ++b_count[seed];
  }
  const int n_levels = static_cast<int>(levels.size());
  for (auto* side : {&pooled_sides.a, &pooled_sides.b}) {
    auto& count = side == &pooled_sides.a ? a_count : b_count;
    for (auto it = side->begin(); it != side->end();) {
      if (count[it->first] != n_levels) {
        it = side->erase(it);
      } else {
        it->second /= n_levels;
        ++it;
      }
    }
  }
  if (pooled_sides.a.empty())
    return absl::NotFoundError(
        absl::StrCat("claim ", claim.id(),
                     ": no seed has rows at every level of ", claim.over()));
  LevelResult level_result = EffectInterval(claim, pooled_sides, kConfidence);
  level_result.no_spread = level_result.no_spread || level_without_spread;
  level_result.verdict = judge(level_result.effect);
  result.levels.push_back(level_result);
  result.verdict = level_result.verdict;
  return result;
}

absl::StatusOr<ClaimResult> JudgeMonotone(const Claim& claim,
                                          const TidyTable& table,
                                          ClaimResult result) {
  ASSIGN_OR_RETURN(auto levels, Levels(table, claim.where(), claim.over()));
  ASSIGN_OR_RETURN(auto x, NumericLevels(levels, claim));
  if (claim.log_over()) {
    for (double& value : x) {
      if (value <= 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("claim ", claim.id(),
                         ": log_over needs positive levels of ", claim.over()));
      }
      value = std::log2(value);
    }
  }
  const Effect effect =
      claim.effect() == EFFECT_UNSPECIFIED ? DIFFERENCE : claim.effect();
  // seed -> effect at each level; only seeds present at every level (and on
  // both sides) count.
  std::map<std::string, std::vector<double>> curves;
  std::map<std::string, int> present;
  for (const std::string& level : levels) {
    ASSIGN_OR_RETURN(auto sides, CollectSides(claim, table, level));
    for (const auto& [seed, a] : sides.a) {
      double value;
      if (sides.against_reference) {
        value = EffectOf(a, claim.reference_value(), effect);
      } else {
        auto it = sides.b.find(seed);
        if (it == sides.b.end()) continue;
        value = EffectOf(a, it->second, effect);
      }
      curves[seed].push_back(value);
      ++present[seed];
    }
  }
  std::vector<double> slopes;
  bool finite = true;
  for (const auto& [seed, curve] : curves) {
    if (present[seed] != static_cast<int>(levels.size())) continue;
    finite = finite && AllFinite(curve);
    slopes.push_back(Slope(x, curve));
  }
  if (slopes.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "claim ", claim.id(), ": no seed has both sides at every level of ",
        claim.over()));
  }
  LevelResult level_result;
  level_result.effect = MeanInterval(slopes, kConfidence);
  level_result.method = IntervalMethod::kSlopeT;
  level_result.no_spread = NoSpread(slopes);
  // A relative effect over a zero B at some level: no slope.
  if (!finite) level_result.effect = Undefined(level_result.effect.n);
  // The advantage grows: a rising effect, or a falling one when lower is
  // better.
  level_result.verdict = BetterVerdict(claim, level_result.effect);
  result.levels.push_back(level_result);
  result.verdict = level_result.verdict;
  return result;
}

absl::StatusOr<ClaimResult> JudgeCorrelation(const Claim& claim,
                                             const TidyTable& table,
                                             ClaimResult result) {
  ASSIGN_OR_RETURN(auto levels, Levels(table, claim.where(), claim.over()));
  // Per seed, A's and B's metric at every level; only seeds with both sides at
  // every level count, so each r is over the same levels.
  std::map<std::string, std::vector<double>> xs, ys;
  for (const std::string& level : levels) {
    ASSIGN_OR_RETURN(auto sides, CollectSides(claim, table, level));
    if (sides.against_reference) {
      return absl::InvalidArgumentError(absl::StrCat(
          "claim ", claim.id(), ": CORRELATION needs b or b_metric"));
    }
    for (const auto& [seed, a] : sides.a) {
      auto b = sides.b.find(seed);
      if (b == sides.b.end()) continue;
      xs[seed].push_back(a);
      ys[seed].push_back(b->second);
    }
  }
  // One r per seed (a trained model), Fisher's z of each, a t interval over
  // seeds, back to r: the replicates are trainings, not levels.
  std::vector<double> z;
  for (const auto& [seed, x] : xs) {
    if (x.size() != levels.size() || x.size() < 3) continue;
    const double r = CorrelationInterval(x, ys[seed], kConfidence).estimate;
    z.push_back(
        std::isnan(r) ? r : std::atanh(std::clamp(r, -1 + 1e-12, 1 - 1e-12)));
  }
  LevelResult level_result;
  level_result.method = IntervalMethod::kFisherZ;
  level_result.effect = AllFinite(z) ? MeanInterval(z, kConfidence)
                                     : Undefined(static_cast<int>(z.size()));
  level_result.no_spread = NoSpread(z);
  for (double* bound : {&level_result.effect.estimate, &level_result.effect.low,
                        &level_result.effect.high}) {
    if (std::isfinite(*bound)) *bound = std::tanh(*bound);
  }
  if (std::isinf(level_result.effect.low)) level_result.effect.low = -1.0;
  if (std::isinf(level_result.effect.high)) level_result.effect.high = 1.0;
  const Interval& r = level_result.effect;
  const bool negative = claim.negative_correlation();
  if (std::isnan(r.estimate)) {
    level_result.verdict = Verdict::kUnresolved;
  } else if (negative ? r.high < 0 : r.low > 0) {
    level_result.verdict = Verdict::kHolds;
  } else if (negative ? r.low > 0 : r.high < 0) {
    level_result.verdict = Verdict::kDoesNotHold;
  } else {
    level_result.verdict = Verdict::kUnresolved;
  }
  result.levels.push_back(level_result);
  result.verdict = level_result.verdict;
  return result;
}

// "" when the precondition holds, else why not.
absl::StatusOr<std::string> CheckPrecondition(const Precondition& precondition,
                                              const Claim& claim,
                                              const Tables& tables) {
  const std::string table_name =
      precondition.table().empty() ? claim.table() : precondition.table();
  ASSIGN_OR_RETURN(auto table, FindTable(tables, table_name,
                                         absl::StrCat("claim ", claim.id(),
                                                      " precondition")));
  const std::string seed = SeedColumnOrDefault(claim.seed_column());
  switch (precondition.kind()) {
    case Precondition::INTERIOR_OPTIMUM: {
      // Groups: distinct combinations of group_by among the filtered rows.
      std::vector<int> group_columns;
      for (const std::string& column : precondition.group_by()) {
        ASSIGN_OR_RETURN(auto index, (table)->Column(column));
        group_columns.push_back(index);
      }
      std::vector<std::vector<std::string>> groups;
      for (const auto& row : (table)->rows()) {
        if (!PassesFilters(*table, row, precondition.where())) continue;
        std::vector<std::string> key;
        for (int c : group_columns) key.push_back(row[c]);
        if (std::find(groups.begin(), groups.end(), key) == groups.end())
          groups.push_back(key);
      }
      std::vector<std::string> at_edge;
      for (const auto& key : groups) {
        google::protobuf::RepeatedPtrField<Filter> where = precondition.where();
        for (size_t i = 0; i < key.size(); ++i) {
          Filter* filter = where.Add();
          filter->set_column(precondition.group_by(i));
          filter->set_value(key[i]);
        }
        ASSIGN_OR_RETURN(auto levels,
                         Levels(*table, where, precondition.over()));
        std::vector<double> means;
        for (const std::string& level : levels) {
          ASSIGN_OR_RETURN(auto by_seed, SeedMeans(*table, where, seed, "", "",
                                                   precondition.over(), level,
                                                   precondition.metric(), {}));
          means.push_back(Mean(SeedValues(by_seed)));
        }
        const bool lower = precondition.better() != HIGHER_IS_BETTER;
        const size_t best =
            lower
                ? std::min_element(means.begin(), means.end()) - means.begin()
                : std::max_element(means.begin(), means.end()) - means.begin();
        if (means.size() < 3 || best == 0 || best + 1 == means.size()) {
          at_edge.push_back(
              absl::StrCat(absl::StrJoin(key, "/"), " (best ",
                           precondition.over(), " ", (levels)[best], " of ",
                           (levels).front(), "..", (levels).back(), ")"));
        }
      }
      if (at_edge.empty()) return std::string();
      return absl::StrCat("optimum at the edge of the sweep in ",
                          at_edge.size(), " of ", groups.size(),
                          " curves: ", absl::StrJoin(at_edge, "; "),
                          precondition.why().empty()
                              ? ""
                              : absl::StrCat(" (", precondition.why(), ")"));
    }
    case Precondition::MIN_SEEDS: {
      // Distinct seeds of each compared arm (A, B and GAIN_RATIO's baseline;
      // every level counted together); the fewest count.
      const bool has_seed = (table)->HasColumn(seed);
      const int seed_index = has_seed ? *(table)->Column(seed) : -1;
      int arm_index = -1;
      if (!claim.arm_column().empty()) {
        ASSIGN_OR_RETURN(auto index, (table)->Column(claim.arm_column()));
        arm_index = index;
      }
      std::vector<std::string> arms = {claim.a()};
      if (arm_index >= 0) {
        for (const std::string& arm : {claim.b(), claim.baseline()})
          if (!arm.empty()) arms.push_back(arm);
      }
      size_t fewest = std::numeric_limits<size_t>::max();
      for (const std::string& arm : arms) {
        std::set<std::string> seeds;
        for (const auto& row : (table)->rows()) {
          if (!PassesFilters(*table, row, claim.where())) continue;
          if (arm_index >= 0 && row[arm_index] != arm) continue;
          seeds.insert(has_seed ? row[seed_index] : "1");
        }
        fewest = std::min(fewest, seeds.size());
      }
      if (static_cast<int>(fewest) >= precondition.min_seeds())
        return std::string();
      return absl::StrCat("n = ", fewest, " seeds, fewer than ",
                          precondition.min_seeds(),
                          precondition.why().empty()
                              ? ""
                              : absl::StrCat(" (", precondition.why(), ")"));
    }
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("claim ", claim.id(), ": precondition without a kind"));
  }
}

}  // namespace

const char* VerdictName(Verdict verdict) {
  switch (verdict) {
    case Verdict::kHolds:
      return "HOLDS";
    case Verdict::kDoesNotHold:
      return "DOES NOT HOLD";
    case Verdict::kUnresolved:
      return "UNRESOLVED";
    case Verdict::kNotTestable:
      return "NOT TESTABLE";
  }
  return "?";
}

bool IsVerdictName(absl::string_view name) {
  for (Verdict verdict : {Verdict::kHolds, Verdict::kDoesNotHold,
                          Verdict::kUnresolved, Verdict::kNotTestable}) {
    if (name == VerdictName(verdict)) return true;
  }
  return false;
}

std::string SeedColumnOrDefault(const std::string& column) {
  return column.empty() ? "seed" : column;
}

std::vector<double> SeedValues(const std::map<std::string, double>& by_seed) {
  std::vector<double> values;
  for (const auto& [seed, value] : by_seed) values.push_back(value);
  return values;
}

const char* IntervalMethodName(IntervalMethod method) {
  switch (method) {
    case IntervalMethod::kPairedT:
      return "paired t";
    case IntervalMethod::kWelchT:
      return "Welch t";
    case IntervalMethod::kOneSampleT:
      return "one-sample t";
    case IntervalMethod::kSlopeT:
      return "t over per-seed slopes";
    case IntervalMethod::kFisherZ:
      return "t over per-seed Fisher z";
  }
  return "?";
}

bool PassesFilters(const TidyTable& table, const std::vector<std::string>& row,
                   const google::protobuf::RepeatedPtrField<Filter>& where) {
  for (const Filter& filter : where) {
    auto column = table.Column(filter.column());
    if (!column.ok()) return false;
    const std::string& value = row[*column];
    if (filter.values_size() > 0) {
      if (std::find(filter.values().begin(), filter.values().end(), value) ==
          filter.values().end()) {
        return false;
      }
    } else if (value != filter.value()) {
      return false;
    }
  }
  return true;
}

absl::StatusOr<std::map<std::string, double>> SeedMeans(
    const TidyTable& table,
    const google::protobuf::RepeatedPtrField<Filter>& where,
    const std::string& seed_column, const std::string& arm_column,
    const std::string& arm, const std::string& level_column,
    const std::string& level, const std::string& metric,
    const google::protobuf::RepeatedPtrField<std::string>& average_over) {
  for (const Filter& filter : where) {
    if (auto c = table.Column(filter.column()); !c.ok()) return c.status();
  }
  ASSIGN_OR_RETURN(auto metric_index, table.Column(metric));
  int seed_index = -1, arm_index = -1, level_index = -1;
  if (table.HasColumn(seed_column)) seed_index = *table.Column(seed_column);
  if (!arm_column.empty()) {
    ASSIGN_OR_RETURN(auto index, table.Column(arm_column));
    arm_index = index;
  }
  if (!level_column.empty() && !level.empty()) {
    ASSIGN_OR_RETURN(auto index, table.Column(level_column));
    level_index = index;
  }
  std::vector<int> average_indices;
  for (const std::string& column : average_over) {
    ASSIGN_OR_RETURN(auto index, table.Column(column));
    average_indices.push_back(index);
  }
  std::map<std::string, double> sum;
  std::map<std::string, double> sum_of_magnitudes;
  std::map<std::string, int> count;
  std::map<std::string, std::set<std::vector<std::string>>> observations;
  for (size_t r = 0; r < table.rows().size(); ++r) {
    const auto& row = table.rows()[r];
    if (!PassesFilters(table, row, where)) continue;
    if (arm_index >= 0 && row[arm_index] != arm) continue;
    if (level_index >= 0 && row[level_index] != level) continue;
    const std::string seed = seed_index >= 0 ? row[seed_index] : "1";
    std::vector<std::string> key;
    for (int c : average_indices) key.push_back(row[c]);
    if (!observations[seed].insert(key).second) {
      return absl::InvalidArgumentError(absl::StrCat(
          "table ", table.name(), ": several rows for ",
          arm_column.empty() ? "" : arm_column + "=" + arm + ", ",
          level_index >= 0 ? level_column + "=" + level + ", " : "", "seed ",
          seed,
          average_indices.empty() ? " (filter with where, or name the columns "
                                    "to average in average_over)"
                                  : " with the same average_over values"));
    }
    ASSIGN_OR_RETURN(auto value,
                     ParseNumber(row[metric_index],
                                 absl::StrCat(table.name(), " row ", r + 2,
                                              " column ", metric)));
    sum[seed] += value;
    sum_of_magnitudes[seed] += std::abs(value);
    ++count[seed];
  }
  if (sum.empty()) {
    return absl::NotFoundError(absl::StrCat(
        "table ", table.name(), ": no rows",
        arm_column.empty() ? "" : " for " + arm_column + "=" + arm,
        level_index >= 0 ? " at " + level_column + "=" + level : "",
        " after the filters"));
  }
  for (auto& [seed, total] : sum) {
    // A sum of rounded values that cancel is zero up to its rounding error
    // (about n eps sum|x|), not a tiny B a relative effect may divide by.
    const int n = count[seed];
    if (std::abs(total) <= 4.0 * n * std::numeric_limits<double>::epsilon() *
                               sum_of_magnitudes[seed])
      total = 0.0;
    total /= n;
  }
  return sum;
}

absl::StatusOr<std::vector<std::string>> Levels(
    const TidyTable& table,
    const google::protobuf::RepeatedPtrField<Filter>& where,
    const std::string& column) {
  ASSIGN_OR_RETURN(auto index, table.Column(column));
  std::vector<std::string> levels;
  for (const auto& row : table.rows()) {
    if (!PassesFilters(table, row, where)) continue;
    if (std::find(levels.begin(), levels.end(), row[index]) == levels.end())
      levels.push_back(row[index]);
  }
  if (std::all_of(levels.begin(), levels.end(), IsNumber)) {
    std::stable_sort(levels.begin(), levels.end(),
                     [](const std::string& a, const std::string& b) {
                       double x, y;
                       absl::SimpleAtod(a, &x);
                       absl::SimpleAtod(b, &y);
                       return x < y;
                     });
  }
  return levels;
}

absl::Status ValidateClaimSet(const ClaimSet& claims, const Tables& tables) {
  std::set<std::string> ids;
  std::set<std::string> control_ids;
  std::set<std::string> replicates = {"seed"};
  replicates.insert(claims.independent_replicates().begin(),
                    claims.independent_replicates().end());
  for (const Amendment& amendment : claims.amendments()) {
    if (amendment.date().size() != 10 || amendment.what().empty() ||
        amendment.why().empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("amendment '", amendment.what(),
                       "': needs a date (YYYY-MM-DD), what and why"));
    }
  }
  auto check = [&](const Claim& claim, bool is_control) -> absl::Status {
    const std::string who =
        absl::StrCat(is_control ? "control " : "claim ", claim.id());
    if (claim.id().empty())
      return absl::InvalidArgumentError("a claim without an id");
    if (!ids.insert(claim.id()).second)
      return absl::InvalidArgumentError(absl::StrCat(who, ": duplicate id"));
    if (claim.comparison() == COMPARISON_UNSPECIFIED) {
      return absl::InvalidArgumentError(absl::StrCat(who, ": no comparison"));
    }
    if (claim.better() == DIRECTION_UNSPECIFIED &&
        claim.comparison() != CORRELATION && claim.comparison() != WITHIN) {
      return absl::InvalidArgumentError(
          absl::StrCat(who, ": no direction (better)"));
    }
    if (claim.metric().empty())
      return absl::InvalidArgumentError(absl::StrCat(who, ": no metric"));
    if (!claim.arm_column().empty() && claim.a().empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(who, ": arm_column without arm a"));
    }
    if ((claim.comparison() == MONOTONE || claim.comparison() == CORRELATION) &&
        claim.over().empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(who, ": MONOTONE and CORRELATION need `over`"));
    }
    if ((claim.comparison() == WITHIN || claim.comparison() == NOT_WORSE) &&
        claim.tolerance() <= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          who, ": WITHIN and NOT_WORSE need a positive tolerance"));
    }
    if (claim.effect() == GAIN_RATIO &&
        (claim.baseline().empty() || claim.b().empty() ||
         claim.arm_column().empty() || !claim.b_metric().empty() ||
         claim.comparison() == MONOTONE || claim.comparison() == CORRELATION ||
         claim.quantifier() == POOLED || claim.baseline() == claim.a() ||
         claim.baseline() == claim.b())) {
      return absl::InvalidArgumentError(absl::StrCat(
          who,
          ": GAIN_RATIO compares arms a and b of arm_column against a third "
          "arm `baseline` (BETTER, WITHIN or NOT_WORSE, not POOLED)"));
    }
    if (!claim.baseline().empty() && claim.effect() != GAIN_RATIO) {
      return absl::InvalidArgumentError(
          absl::StrCat(who, ": baseline is only read by effect GAIN_RATIO"));
    }
    if (!replicates.count(SeedColumnOrDefault(claim.seed_column()))) {
      return absl::InvalidArgumentError(absl::StrCat(
          who, ": its interval is over '", claim.seed_column(),
          "', which is not declared an independent replicate "
          "(independent_replicates): per-token or per-subject spreads are "
          "descriptive, average them within a seed (average_over)"));
    }
    if (claim.basis() == BY_DESIGN) {
      if (is_control || claim.design_reason().empty() ||
          claim.comparison() == CORRELATION) {
        return absl::InvalidArgumentError(absl::StrCat(
            who,
            ": a BY_DESIGN statement is a claim (not a control, not a "
            "CORRELATION) with a design_reason"));
      }
    } else if (!is_control && claim.not_testable_reason().empty()) {
      if (claim.controls().empty() == claim.no_control_reason().empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat(who,
                         ": an empirical claim names controls or gives "
                         "no_control_reason (one of the two)"));
      }
      if ((claim.comparison() == BETTER || claim.comparison() == MONOTONE) &&
          (!(claim.smallest_effect() > 0) ||
           claim.smallest_effect_reason().empty())) {
        return absl::InvalidArgumentError(
            absl::StrCat(who,
                         ": an empirical BETTER or MONOTONE claim states its "
                         "smallest_effect (> 0) and smallest_effect_reason"));
      }
    }
    if (claim.seeds_needed() < 0)
      return absl::InvalidArgumentError(
          absl::StrCat(who, ": seeds_needed < 0"));
    if (claim.effect() == RELATIVE_DIFFERENCE && claim.b().empty() &&
        claim.b_metric().empty() && claim.reference_value() == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          who, ": a relative effect against reference_value 0 is undefined"));
    }
    if (claim.magnitude_claimed() && !claim.has_paper_effect()) {
      return absl::InvalidArgumentError(
          absl::StrCat(who, ": magnitude_claimed without paper_effect"));
    }
    for (const std::string& control : claim.controls()) {
      if (!control_ids.count(control)) {
        return absl::InvalidArgumentError(
            absl::StrCat(who, ": control '", control,
                         "' is not a control listed before it"));
      }
    }
    ASSIGN_OR_RETURN(auto table, FindTable(tables, claim.table(), who));
    for (const std::string& column :
         {claim.arm_column(), claim.metric(), claim.over(), claim.b_metric()}) {
      if (column.empty()) continue;
      if (auto c = (table)->Column(column); !c.ok())
        return absl::NotFoundError(
            absl::StrCat(who, ": ", c.status().message()));
    }
    if (is_control) control_ids.insert(claim.id());
    return absl::OkStatus();
  };
  for (const Claim& control : claims.controls()) {
    RETURN_IF_ERROR(check(control, true));
  }
  for (const Claim& claim : claims.claims()) {
    RETURN_IF_ERROR(check(claim, false));
  }
  return absl::OkStatus();
}

absl::StatusOr<ClaimResult> JudgeClaim(
    const Claim& claim, bool is_control, const Tables& tables,
    const std::map<std::string, Verdict>& control_verdicts) {
  ASSIGN_OR_RETURN(auto table, FindTable(tables, claim.table(),
                                         absl::StrCat("claim ", claim.id())));
  ClaimResult result;
  result.claim = &claim;
  result.is_control = is_control;
  absl::StatusOr<ClaimResult> judged;
  switch (claim.comparison()) {
    case BETTER:
    case WITHIN:
    case NOT_WORSE:
      judged = JudgeComparison(claim, *table, result);
      break;
    case MONOTONE:
      judged = JudgeMonotone(claim, *table, result);
      break;
    case CORRELATION:
      judged = JudgeCorrelation(claim, *table, result);
      break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("claim ", claim.id(), ": no comparison"));
  }
  // A design statement must not vary: a seed that differs is a wrong label.
  if (judged.ok() && claim.basis() == BY_DESIGN) {
    for (const LevelResult& level : judged->levels) {
      if (level.effect.n >= 2 && !level.no_spread) {
        return absl::InvalidArgumentError(absl::StrCat(
            "claim ", claim.id(),
            " is BY_DESIGN but its effect differs between seeds",
            level.level.empty() ? "" : " at " + claim.over() + " = ",
            level.level, " (mean ", level.effect.estimate,
            "): a measured quantity is EMPIRICAL"));
      }
    }
  }
  // The claim's own reason, controls, preconditions, the seed plan and the
  // noise estimate: each makes the claim NOT TESTABLE, the effect still shown.
  std::vector<std::string> reasons;
  if (!claim.not_testable_reason().empty())
    reasons.push_back(claim.not_testable_reason());
  for (const std::string& control : claim.controls()) {
    auto it = control_verdicts.find(control);
    const Verdict verdict =
        it == control_verdicts.end() ? Verdict::kUnresolved : it->second;
    if (verdict != Verdict::kHolds) {
      reasons.push_back(
          absl::StrCat("control ", control, " is ", VerdictName(verdict)));
    }
  }
  bool precondition_failed = false;
  for (const Precondition& precondition : claim.preconditions()) {
    ASSIGN_OR_RETURN(auto why, CheckPrecondition(precondition, claim, tables));
    if (!why.empty()) {
      reasons.push_back(why);
      precondition_failed = true;
    }
  }
  if (!judged.ok()) {
    // A claim gated by a failed control may have no rows to compare (e.g. no
    // recalled fact to patch): it is NOT TESTABLE, not an error. A claim
    // whose levels are all missing is, only when one of its preconditions
    // says why (MIN_SEEDS: every level left out); else a wiring error.
    const bool no_rows =
        absl::IsNotFound(judged.status()) ||
        (precondition_failed && absl::IsFailedPrecondition(judged.status()));
    if (!reasons.empty() && no_rows) {
      result.verdict = Verdict::kNotTestable;
      result.reason = absl::StrCat(absl::StrJoin(reasons, "; "), "; no rows (",
                                   judged.status().message(), ")");
      return result;
    }
    return absl::Status(
        judged.status().code(),
        absl::StrCat("claim ", claim.id(), ": ", judged.status().message()));
  }
  // Claims only: a control may read one fixed model (the base LM every seed's
  // fit shares), whose value no seed changes.
  if (!is_control && claim.basis() == EMPIRICAL) {
    int fewest = std::numeric_limits<int>::max();
    bool undefined = false, flat = false;
    for (LevelResult& level : judged->levels) {
      fewest = std::min(fewest, level.effect.n);
      undefined = undefined || std::isnan(level.effect.estimate);
      if (!level.no_spread) continue;
      // A level's own verdict needs a noise estimate too: its row in
      // verdicts.csv must not read HOLDS on a zero-width interval.
      level.verdict = Verdict::kNotTestable;
      if (!flat) {
        flat = true;
        reasons.push_back(absl::StrCat(
            "every seed gives the same effect (", level.effect.estimate,
            level.level.empty() ? "" : " at ",
            level.level.empty() ? "" : claim.over() + " = " + level.level,
            "): no noise estimate; a value fixed by the configuration is "
            "basis BY_DESIGN"));
      }
    }
    // No estimate (a relative effect over a B of zero): nothing was judged.
    if (undefined)
      reasons.push_back(
          "the effect is undefined (a relative effect over B = 0)");
    if (claim.seeds_needed() > 0 && fewest < claim.seeds_needed()) {
      reasons.push_back(absl::StrCat(
          "underpowered: the seed plan needs n = ", claim.seeds_needed(),
          " seeds for 80% power at the smallest effect of interest, the data "
          "has n = ",
          fewest));
    }
  }
  if (!reasons.empty()) {
    judged->verdict = Verdict::kNotTestable;
    judged->reason = absl::StrJoin(reasons, "; ");
  }
  // A design statement is what the configuration promises, not a finding: one
  // that does not hold means the configuration is wrong, so nothing built on
  // it may be reported.
  if (claim.basis() == BY_DESIGN && judged->verdict == Verdict::kDoesNotHold) {
    return absl::FailedPreconditionError(absl::StrCat(
        "claim ", claim.id(),
        " is BY_DESIGN and does not hold: the configuration does not do what "
        "it states (",
        claim.statement(), ")"));
  }
  return judged;
}

namespace {

// What a claim needs that may not be run: its arms, and its filters (a whole
// base model, a task, ...), each named as `arms_not_run` lists it ("swiglu",
// "base=swiglu") with the column and value its rows would have.
struct RunnablePart {
  std::string name, column, value;
};

std::vector<RunnablePart> RunnableParts(const Claim& claim) {
  std::vector<RunnablePart> parts;
  for (const std::string& arm : {claim.a(), claim.b(), claim.baseline()}) {
    if (!arm.empty()) parts.push_back({arm, claim.arm_column(), arm});
  }
  for (const Filter& filter : claim.where()) {
    if (!filter.value().empty()) {
      parts.push_back({absl::StrCat(filter.column(), "=", filter.value()),
                       filter.column(), filter.value()});
    }
  }
  return parts;
}

// The first of the claim's arms or filters that is in `arms_not_run`, or "".
std::string ArmNotRun(const Claim& claim,
                      const std::set<std::string>& arms_not_run) {
  for (const RunnablePart& part : RunnableParts(claim)) {
    if (arms_not_run.count(part.name)) return part.name;
  }
  return "";
}

// Every arm (or column=value) not run is named by a claim and has no rows in
// its table.
absl::Status CheckArmsNotRun(const ClaimSet& claims, const Tables& tables,
                             const std::set<std::string>& arms_not_run) {
  std::set<std::string> named;
  for (const auto* list : {&claims.controls(), &claims.claims()}) {
    for (const Claim& claim : *list) {
      for (const RunnablePart& part : RunnableParts(claim)) {
        if (!arms_not_run.count(part.name)) continue;
        named.insert(part.name);
        const TidyTable& table = tables.at(claim.table());
        ASSIGN_OR_RETURN(auto column, table.Column(part.column));
        for (const std::vector<std::string>& row : table.rows()) {
          if (row[column] == part.value) {
            return absl::InvalidArgumentError(absl::StrCat(
                "arm '", part.name, "' is listed as not run but has rows in ",
                claim.table(), " (claim ", claim.id(), ")"));
          }
        }
      }
    }
  }
  for (const std::string& arm : arms_not_run) {
    if (!named.count(arm)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "arm '", arm, "' is listed as not run but no claim names it"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<ClaimResult>> JudgeClaimSet(
    const ClaimSet& claims, const Tables& tables,
    const std::vector<std::string>& arms_not_run) {
  RETURN_IF_ERROR(ValidateClaimSet(claims, tables));
  const std::set<std::string> not_run(arms_not_run.begin(), arms_not_run.end());
  RETURN_IF_ERROR(CheckArmsNotRun(claims, tables, not_run));
  std::vector<ClaimResult> results;
  std::map<std::string, Verdict> control_verdicts;
  auto judge = [&](const Claim& claim,
                   bool is_control) -> absl::StatusOr<ClaimResult> {
    if (const std::string arm = ArmNotRun(claim, not_run); !arm.empty()) {
      ClaimResult result;
      result.claim = &claim;
      result.is_control = is_control;
      result.verdict = Verdict::kNotTestable;
      result.reason =
          arm.find('=') != std::string::npos
              ? absl::StrCat(arm, " is not run in this build")
              : absl::StrCat("arm ", arm, " is not run at this scale");
      return result;
    }
    return JudgeClaim(claim, is_control, tables, control_verdicts);
  };
  for (const Claim& control : claims.controls()) {
    ASSIGN_OR_RETURN(auto result, judge(control, true));
    control_verdicts[control.id()] = result.verdict;
    results.push_back(std::move(result));
  }
  for (const Claim& claim : claims.claims()) {
    ASSIGN_OR_RETURN(auto result, judge(claim, false));
    results.push_back(std::move(result));
  }
  return results;
}

}  // namespace sparse_layers::claims
