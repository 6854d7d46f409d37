#include "analysis/claims/seed_plan.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analysis/claims/claims_engine.h"
#include "analysis/claims/statistics.h"
#include "base/common/status_macros.h"

namespace sparse_layers::claims {
namespace {

struct PilotRow {
  std::string level;
  double low = 0, high = 0, confidence = kConfidence;
  int n = 0;
  bool bounded = false;
};

absl::StatusOr<std::map<std::string, std::vector<PilotRow>>> ReadPilot(
    const TidyTable& pilot) {
  int id, level, low, high, n, confidence = -1;
  for (auto [column, index] : {std::pair<const char*, int*>{"id", &id},
                               {"level", &level},
                               {"ci_low", &low},
                               {"ci_high", &high},
                               {"n", &n}}) {
    ASSIGN_OR_RETURN(auto found, pilot.Column(column));
    *index = found;
  }
  if (pilot.HasColumn("confidence")) confidence = *pilot.Column("confidence");
  std::map<std::string, std::vector<PilotRow>> rows;
  for (size_t r = 0; r < pilot.rows().size(); ++r) {
    const auto& cells = pilot.rows()[r];
    const std::string where = absl::StrCat(pilot.name(), " row ", r + 2);
    PilotRow row;
    row.level = cells[level];
    if (!cells[n].empty()) {
      ASSIGN_OR_RETURN(auto value, ParseNumber(cells[n], where + " column n"));
      row.n = static_cast<int>(value);
    }
    row.bounded = !cells[low].empty() && !cells[high].empty();
    if (row.bounded) {
      ASSIGN_OR_RETURN(row.low,
                       ParseNumber(cells[low], where + " column ci_low"));
      ASSIGN_OR_RETURN(row.high,
                       ParseNumber(cells[high], where + " column ci_high"));
    }
    if (confidence >= 0 && !cells[confidence].empty()) {
      ASSIGN_OR_RETURN(
          auto c, ParseNumber(cells[confidence], where + " column confidence"));
      row.confidence = c;
    }
    rows[cells[id]].push_back(row);
  }
  return rows;
}

}  // namespace

absl::StatusOr<std::vector<ClaimPlan>> PlanSeeds(const ClaimSet& claims,
                                                 const TidyTable& pilot,
                                                 double power, int cap) {
  ASSIGN_OR_RETURN(auto rows, ReadPilot(pilot));
  std::vector<ClaimPlan> plans;
  for (const Claim& claim : claims.claims()) {
    ClaimPlan plan;
    plan.id = claim.id();
    const bool band = claim.comparison() == WITHIN;
    if (claim.basis() == BY_DESIGN) {
      plan.why_not = "design statement";
    } else if (claim.comparison() == CORRELATION) {
      plan.why_not = "a correlation: no effect of interest in r";
    } else if (band || claim.comparison() == NOT_WORSE) {
      plan.effect_of_interest = std::fabs(claim.tolerance());
    } else {
      plan.effect_of_interest = claim.smallest_effect();
      if (!(plan.effect_of_interest > 0)) plan.why_not = "no smallest_effect";
    }
    auto found = rows.find(claim.id());
    if (plan.why_not.empty() && found == rows.end())
      plan.why_not = "no pilot rows";
    if (!plan.why_not.empty()) {
      plans.push_back(plan);
      continue;
    }
    // An EVERY claim's levels if the pilot has them; a claim with one interval
    // (POOLED, MONOTONE, a single comparison) its summary row.
    const bool every = claim.quantifier() != POOLED &&
                       claim.comparison() != MONOTONE && !claim.over().empty();
    std::vector<PilotRow> levels;
    for (const PilotRow& row : found->second) {
      if (every ? !row.level.empty() : row.level.empty()) levels.push_back(row);
    }
    if (levels.empty()) levels = found->second;
    plan.levels = static_cast<int>(levels.size());
    plan.pilot_n = cap + 1;
    // Each level at the Bonferroni share of 5%, as the engine judges it, and
    // at power^(1/L), so that every level holds together with `power`.
    const double alpha = (1.0 - kConfidence) / plan.levels;
    const double level_power = std::pow(power, 1.0 / plan.levels);
    for (const PilotRow& row : levels) {
      plan.pilot_n = std::min(plan.pilot_n, row.n);
      if (!row.bounded || row.n < 2) {
        plan.why_not = "pilot interval unbounded (n < 2)";
        break;
      }
      const double sd =
          SdFromHalfWidth(0.5 * (row.high - row.low), row.n, row.confidence);
      if (!(sd > 0)) {
        plan.why_not = "no spread in the pilot";
        break;
      }
      plan.pilot_sd = std::max(plan.pilot_sd, sd);
      plan.seeds_needed = std::max(
          plan.seeds_needed, SeedsForPower(sd, plan.effect_of_interest, alpha,
                                           level_power, band, cap));
    }
    if (!plan.why_not.empty()) plan.seeds_needed = 0;
    plans.push_back(plan);
  }
  return plans;
}

std::string RenderSeedPlan(const std::vector<ClaimPlan>& plans, double power,
                           int max_seeds) {
  std::string out = absl::StrFormat(
      "| claim | effect of interest | levels | pilot n | pilot sd | seeds for "
      "%.0f%% power |%s\n|---|---|---|---|---|---|%s\n",
      100 * power,
      max_seeds > 0 ? absl::StrCat(" at ", max_seeds, " seeds |") : "",
      max_seeds > 0 ? "---|" : "");
  for (const ClaimPlan& plan : plans) {
    if (!plan.why_not.empty()) {
      absl::StrAppend(&out, "| ", plan.id,
                      " | - | - | - | - | not planned: ", plan.why_not, " |",
                      max_seeds > 0 ? " - |" : "", "\n");
      continue;
    }
    absl::StrAppend(&out, "| ", plan.id, " | ",
                    absl::StrFormat("%.4g", plan.effect_of_interest), " | ",
                    plan.levels, " | ", plan.pilot_n, " | ",
                    absl::StrFormat("%.4g", plan.pilot_sd), " | ",
                    plan.seeds_needed, " |");
    if (max_seeds > 0) {
      absl::StrAppend(&out, plan.seeds_needed <= max_seeds
                                ? " powered |"
                                : absl::StrCat(" underpowered (needs ",
                                               plan.seeds_needed, ") |"));
    }
    out += "\n";
  }
  return out;
}

}  // namespace sparse_layers::claims
