// The seed plan: how many seeds (independent trainings) each empirical claim
// needs for 80% power at its smallest effect of interest, from a pilot's
// intervals (a smoke run's verdicts.csv, or a recorded earlier run's). Fixed
// before the run: the claims file records the chosen n (Claim.seeds_needed)
// and the engine reads a claim with fewer seeds as NOT TESTABLE.
#ifndef SPARSE_LAYERS_ANALYSIS_CLAIMS_SEED_PLAN_H_
#define SPARSE_LAYERS_ANALYSIS_CLAIMS_SEED_PLAN_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "analysis/claims/claims.pb.h"
#include "analysis/claims/tidy_table.h"

namespace sparse_layers::claims {

// One claim's plan: an EVERY claim over L levels needs power^(1/L) at each
// level at the Bonferroni level 0.05 / L, so that all its levels hold together
// with `power`.
struct ClaimPlan {
  std::string id;
  // The effect the claim is powered for: smallest_effect (BETTER, MONOTONE)
  // or the tolerance (WITHIN, NOT_WORSE, planned at a true effect of 0).
  double effect_of_interest = 0.0;
  // Levels the claim runs over (its Bonferroni family).
  int levels = 1;
  int pilot_n = 0;
  // The largest per-seed standard deviation over the levels, from the pilot's
  // interval half-widths.
  double pilot_sd = 0.0;
  // Seeds for the power asked at every level; 0 when not planned (see why).
  int seeds_needed = 0;
  // Why no n was planned (no pilot rows, a design statement, a correlation).
  std::string why_not;
};

// The pilot: a CSV with columns id, level, effect, ci_low, ci_high, n and
// optionally confidence (default 0.95), as verdicts.csv has them. Rows with a
// level are a claim's levels; a claim without them uses its summary row.
// `cap`: the most seeds considered (more reads as cap + 1).
absl::StatusOr<std::vector<ClaimPlan>> PlanSeeds(const ClaimSet& claims,
                                                 const TidyTable& pilot,
                                                 double power, int cap);

// A Markdown table of the plans; claims needing more than `max_seeds` (0: no
// budget given) are listed as underpowered at that budget.
std::string RenderSeedPlan(const std::vector<ClaimPlan>& plans, double power,
                           int max_seeds);

}  // namespace sparse_layers::claims

#endif  // SPARSE_LAYERS_ANALYSIS_CLAIMS_SEED_PLAN_H_
