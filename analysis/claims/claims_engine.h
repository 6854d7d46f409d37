// The one claims engine (a claim is data, never a rule in a script): judges
// every claim of an experiment's claims file (claims.proto) on its tidy CSV
// tables. Each effect (A - B, A / B - 1, or GAIN_RATIO's (A - C) / (B - C) - 1
// against a control arm C) gets its mean and 95% Student-t interval over seeds
// (paired where both arms have the same seeds, Welch otherwise; GAIN_RATIO
// paired only; for correlations, each seed's r across the levels and a t
// interval of their Fisher z over seeds), and one verdict: HOLDS, DOES NOT
// HOLD, UNRESOLVED or NOT TESTABLE. Controls are judged first; a claim whose
// control does not hold, or whose precondition fails, is NOT TESTABLE. A claim
// over several levels has simultaneous intervals (Bonferroni: 95% family-wise).
// An empirical claim whose seeds all give the same value is NOT TESTABLE (no
// noise estimate); a BY_DESIGN claim must give the same value in every seed.
// A claim with fewer seeds than its seed plan needs is NOT TESTABLE.
#ifndef SPARSE_LAYERS_ANALYSIS_CLAIMS_CLAIMS_ENGINE_H_
#define SPARSE_LAYERS_ANALYSIS_CLAIMS_CLAIMS_ENGINE_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "analysis/claims/claims.pb.h"
#include "analysis/claims/statistics.h"
#include "analysis/claims/tidy_table.h"

namespace sparse_layers::claims {

inline constexpr double kConfidence = 0.95;

enum class Verdict { kHolds, kDoesNotHold, kUnresolved, kNotTestable };

// "HOLDS", "DOES NOT HOLD", "UNRESOLVED", "NOT TESTABLE".
const char* VerdictName(Verdict verdict);

// Whether `name` is one of the four verdict names.
bool IsVerdictName(absl::string_view name);

// The seed column a claim, table or figure names; "seed" when it names none.
std::string SeedColumnOrDefault(const std::string& column);

// The values of a seed -> value map (SeedMeans), in seed order.
std::vector<double> SeedValues(const std::map<std::string, double>& by_seed);

// How an interval was computed, for the verdict line.
enum class IntervalMethod { kPairedT, kWelchT, kOneSampleT, kSlopeT, kFisherZ };
const char* IntervalMethodName(IntervalMethod method);

// The effect at one level of the claim's `over` column (level "" when the claim
// has one comparison).
struct LevelResult {
  std::string level;
  Interval effect;
  IntervalMethod method = IntervalMethod::kPairedT;
  Verdict verdict = Verdict::kUnresolved;
  // The interval's own confidence: 1 - 0.05 / levels for a claim over several
  // levels (Bonferroni), so its levels' intervals hold together at 95%.
  double confidence = kConfidence;
  int family_size = 1;
  // Every seed (n >= 2) gave the same effect: no noise estimate (NoSpread).
  bool no_spread = false;
};

struct ClaimResult {
  const Claim* claim = nullptr;
  bool is_control = false;
  Verdict verdict = Verdict::kUnresolved;
  // One entry per level for EVERY; a single entry (level "") otherwise.
  std::vector<LevelResult> levels;
  // Why a claim is NOT TESTABLE (controls or preconditions), empty otherwise.
  std::string reason;
};

using Tables = std::map<std::string, TidyTable>;

// Checks the claims file against itself (ids unique, controls defined,
// comparison fields present) and the tables (named tables and columns exist).
absl::Status ValidateClaimSet(const ClaimSet& claims, const Tables& tables);

// Judges the controls, then the claims, in file order. A claim or control
// whose arm is in `arms_not_run` (an arm the experiment does not train at this
// scale), or one of whose filters is ("base=swiglu": a base model not run), is
// NOT TESTABLE with that reason; each such entry must be named by some claim
// and have no rows in the claim's table, so a typo cannot hide a claim.
absl::StatusOr<std::vector<ClaimResult>> JudgeClaimSet(
    const ClaimSet& claims, const Tables& tables,
    const std::vector<std::string>& arms_not_run = {});

// Judges one claim; `control_verdicts` holds the verdicts of the controls
// judged before it.
absl::StatusOr<ClaimResult> JudgeClaim(
    const Claim& claim, bool is_control, const Tables& tables,
    const std::map<std::string, Verdict>& control_verdicts);

// Seed -> mean of `metric` over the rows of `table` that pass `where`, have
// `arm_column` == arm (unless arm_column is empty) and `level_column` == level
// (unless level_column is empty). Rows of one seed must differ only in
// `average_over` columns (else an error: the claim would silently average other
// arms).
absl::StatusOr<std::map<std::string, double>> SeedMeans(
    const TidyTable& table,
    const google::protobuf::RepeatedPtrField<Filter>& where,
    const std::string& seed_column, const std::string& arm_column,
    const std::string& arm, const std::string& level_column,
    const std::string& level, const std::string& metric,
    const google::protobuf::RepeatedPtrField<std::string>& average_over);

// Distinct values of `column` among rows passing `where`, numerically sorted
// when all are numbers.
absl::StatusOr<std::vector<std::string>> Levels(
    const TidyTable& table,
    const google::protobuf::RepeatedPtrField<Filter>& where,
    const std::string& column);

// Whether a row passes every filter.
bool PassesFilters(const TidyTable& table, const std::vector<std::string>& row,
                   const google::protobuf::RepeatedPtrField<Filter>& where);

}  // namespace sparse_layers::claims

#endif  // SPARSE_LAYERS_ANALYSIS_CLAIMS_CLAIMS_ENGINE_H_
