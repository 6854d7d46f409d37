#include "analysis/claims/section_renderer.h"

#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "analysis/claims/seed_means.h"
#include "base/common/status_macros.h"

namespace sparse_layers::claims {
namespace {

std::string Signed(double value, bool percent) {
  if (std::isinf(value)) return value > 0 ? "+inf" : "-inf";
  if (percent) return absl::StrFormat("%+.2f%%", 100.0 * value);
  return absl::StrFormat("%+.4g", value);
}

bool IsRelative(const Claim& claim) {
  return (claim.effect() == RELATIVE_DIFFERENCE ||
          claim.effect() == GAIN_RATIO) &&
         (claim.comparison() == BETTER || claim.comparison() == WITHIN ||
          claim.comparison() == NOT_WORSE);
}

// What the effect is, in words: "ce[mxd] - ce[transcoder]".
std::string EffectName(const Claim& claim) {
  auto side = [&](const std::string& arm, const std::string& metric) {
    return claim.arm_column().empty() ? metric
                                      : absl::StrCat(metric, "[", arm, "]");
  };
  const std::string a = side(claim.a(), claim.metric());
  std::string b;
  if (!claim.b_metric().empty()) {
    b = side(claim.b().empty() ? claim.a() : claim.b(), claim.b_metric());
  } else if (!claim.b().empty()) {
    b = side(claim.b(), claim.metric());
  } else {
    b = FormatNumber(claim.reference_value(), 6);
  }
  std::string effect = absl::StrCat(a, " - ", b);
  if (claim.effect() == RELATIVE_DIFFERENCE) {
    effect = absl::StrCat(a, " / ", b, " - 1");
  } else if (claim.effect() == GAIN_RATIO) {
    const std::string c = side(claim.baseline(), claim.metric());
    effect = absl::StrCat("(", a, " - ", c, ") / (", b, " - ", c, ") - 1");
  }
  switch (claim.comparison()) {
    case MONOTONE:
      return absl::StrCat("slope of (", effect, ") per ",
                          claim.log_over() ? "doubling" : "unit", " of ",
                          claim.over());
    case CORRELATION:
      return absl::StrCat("Pearson r of ", a, " and ", b, " across ",
                          claim.over());
    default:
      return effect;
  }
}

// `unit` names what n counts: seeds, or the claim's own seed_column.
std::string IntervalText(const LevelResult& level, bool percent,
                         const std::string& seed_column) {
  const Interval& e = level.effect;
  std::string bounds;
  if (std::isinf(e.low) || std::isinf(e.high) || std::isnan(e.estimate) ||
      (level.method == IntervalMethod::kFisherZ && e.n < 2)) {
    bounds = "no interval";
  } else if (level.no_spread && e.n >= 2) {
    // A value every seed shares (a design statement, a control reading the
    // one base LM) has no noise to estimate; a zero-width CI would imply one.
    bounds = "the same in every seed (one fixed model, no interval)";
  } else {
    bounds = absl::StrCat(FormatNumber(100.0 * level.confidence, 4), "% CI [",
                          Signed(e.low, percent), ", ", Signed(e.high, percent),
                          "]");
  }
  const std::string unit = seed_column.empty() || seed_column == "seed"
                               ? (e.n == 1 ? " seed" : " seeds")
                               : absl::StrCat(" (", seed_column, ")");
  return absl::StrCat(Signed(e.estimate, percent), ", ", bounds, ", n = ", e.n,
                      unit, " (", IntervalMethodName(level.method), ")");
}

// How many of `judged` empirical claims' verdicts chance alone would make
// wrong.
std::string ChanceLine(int judged) {
  return absl::StrFormat(
      "Error rate: %d empirical claims judged (not NOT TESTABLE), each at a "
      "95%% family-wise level over its levels (Bonferroni): each verdict "
      "(HOLDS or DOES NOT HOLD) is wrong with probability at most 5%%, so at "
      "most about %.2g wrong verdicts are expected by chance alone. Not "
      "corrected across claims.",
      judged, 0.05 * judged);
}

std::string Bold(Verdict verdict) {
  return absl::StrCat("**", VerdictName(verdict), "**");
}

}  // namespace

std::string RenderVerdict(const ClaimResult& result) {
  const Claim& claim = *result.claim;
  const bool percent = IsRelative(claim);
  std::string line = absl::StrCat(
      "- ", claim.id(),
      claim.source().empty() ? "" : absl::StrCat(" (", claim.source(), ")"),
      ": ", claim.statement(), " → ", Bold(result.verdict), ".");
  const bool per_level =
      result.levels.size() > 1 ||
      (!result.levels.empty() && !result.levels[0].level.empty());
  if (!per_level && !result.levels.empty()) {
    absl::StrAppend(
        &line, " ", EffectName(claim), " = ",
        IntervalText(result.levels[0], percent, claim.seed_column()), ".");
  } else if (per_level) {
    absl::StrAppend(&line, " ", EffectName(claim), " at each ", claim.over(),
                    " below");
    if (result.levels[0].family_size > 1) {
      absl::StrAppend(
          &line, ", simultaneous 95% intervals over its ",
          result.levels[0].family_size, " levels (Bonferroni: each at ",
          FormatNumber(100.0 * result.levels[0].confidence, 4), "%)");
    }
    line += ".";
  } else {
    // Nothing measured (an arm not run, no rows): the effect it would be.
    absl::StrAppend(&line, " ", EffectName(claim), ": not measured.");
  }
  if (claim.comparison() == NOT_WORSE) {
    absl::StrAppend(&line, " Not worse by more than ",
                    percent ? absl::StrFormat("%.2f%%", 100 * claim.tolerance())
                            : FormatNumber(claim.tolerance()),
                    ".");
  }
  if (claim.comparison() == WITHIN) {
    absl::StrAppend(&line, " Tolerance ±",
                    percent ? absl::StrFormat("%.2f%%", 100 * claim.tolerance())
                            : FormatNumber(claim.tolerance()),
                    ".");
  }
  if (claim.has_paper_effect()) {
    absl::StrAppend(&line, " Paper: ", Signed(claim.paper_effect(), percent),
                    claim.magnitude_claimed() ? " (magnitude claimed)." : ".");
  }
  if (!claim.controls().empty()) {
    absl::StrAppend(&line, " Controls: ", absl::StrJoin(claim.controls(), ", "),
                    ".");
  } else if (!claim.no_control_reason().empty()) {
    absl::StrAppend(&line, " No control: ", claim.no_control_reason(), ".");
  }
  if (claim.basis() == BY_DESIGN)
    absl::StrAppend(&line, " By design: ", claim.design_reason(), ".");
  if (claim.has_smallest_effect() && claim.basis() == EMPIRICAL) {
    absl::StrAppend(
        &line, " Smallest effect of interest: ",
        percent ? absl::StrFormat("%.2f%%", 100 * claim.smallest_effect())
                : FormatNumber(claim.smallest_effect()),
        claim.seeds_needed() > 0
            ? absl::StrCat(" (seed plan: n = ", claim.seeds_needed(), ")")
            : "",
        ".");
  }
  if (!result.reason.empty())
    absl::StrAppend(&line, " Not testable: ", result.reason, ".");
  line += "\n";
  if (per_level) {
    for (const LevelResult& level : result.levels) {
      absl::StrAppend(&line, "  - ", claim.over(), " = ", level.level, ": ",
                      IntervalText(level, percent, claim.seed_column()), " → ",
                      Bold(level.verdict), "\n");
    }
  }
  return line;
}

absl::StatusOr<std::string> RenderSection(
    const ClaimSet& claims, const Tables& tables,
    const std::vector<ClaimResult>& results, const RenderOptions& options) {
  std::string out;
  for (const std::string& paragraph : claims.preamble())
    absl::StrAppend(&out, paragraph, "\n\n");
  if (!claims.seed_plan().empty())
    absl::StrAppend(&out, "Seed plan: ", claims.seed_plan(), "\n\n");
  if (claims.tables_size() > 0) {
    absl::StrAppend(&out,
                    "Table cells: mean ± half-width of the 95% t interval "
                    "over seeds; n: seeds (a bare mean when n = 1).\n\n");
  }
  for (const TableSpec& spec : claims.tables()) {
    ASSIGN_OR_RETURN(const std::string table, RenderTable(spec, tables));
    absl::StrAppend(&out, table, "\n");
  }
  ASSIGN_OR_RETURN(const std::string figures,
                   DrawFigures(claims, tables, options));
  absl::StrAppend(&out, figures);
  std::string controls, paper_claims, design;
  int judged = 0;
  for (const ClaimResult& result : results) {
    const bool by_design = result.claim->basis() == BY_DESIGN;
    absl::StrAppend(result.is_control ? &controls
                    : by_design       ? &design
                                      : &paper_claims,
                    RenderVerdict(result));
    if (!result.is_control && !by_design &&
        result.verdict != Verdict::kNotTestable)
      ++judged;
  }
  if (!controls.empty()) {
    absl::StrAppend(
        &out, "## Controls and sanity checks (not counted as paper claims)\n\n",
        controls, "\n");
  }
  if (!design.empty()) {
    absl::StrAppend(&out,
                    "## Checked by construction (fixed by the configuration or "
                    "a theorem: design statements, not evidence, never "
                    "counted)\n\n",
                    design, "\n");
  }
  if (!paper_claims.empty()) {
    absl::StrAppend(&out, "## The papers' claims on our data\n\n", paper_claims,
                    "\n", ChanceLine(judged), "\n\n");
  }
  absl::StrAppend(&out,
                  "Verdicts: HOLDS when the interval (95%, simultaneous over a "
                  "claim's levels) excludes zero in the "
                  "paper's direction (and reaches a "
                  "claimed magnitude), DOES NOT HOLD when it excludes zero the "
                  "other way (or the claimed "
                  "magnitude), UNRESOLVED when it contains zero, NOT TESTABLE "
                  "when a control does not hold, a "
                  "precondition fails, the seed plan's n is not reached or "
                  "every seed gives the same value (analysis/claims).\n");
  for (const std::string& note : claims.notes())
    absl::StrAppend(&out, "\n", note, "\n");
  if (claims.amendments_size() > 0) {
    absl::StrAppend(&out,
                    "\n## Amendments (changes of seeds, base models or claims "
                    "after the seed plan)\n\n");
    for (const Amendment& amendment : claims.amendments()) {
      absl::StrAppend(&out, "- ", amendment.date(), ": ", amendment.what(),
                      " Why: ", amendment.why(), "\n");
    }
  }
  return out;
}

}  // namespace sparse_layers::claims
