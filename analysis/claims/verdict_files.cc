#include "analysis/claims/verdict_files.h"

#include <map>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "analysis/claims/seed_means.h"
#include "base/common/status_macros.h"

namespace sparse_layers::claims {

namespace {

// verdicts.csv's kind: a control, a design statement or an empirical claim.
const char* KindName(const ClaimResult& result) {
  if (result.is_control) return "control";
  return result.claim->basis() == BY_DESIGN ? "design" : "claim";
}

}  // namespace

TidyTable VerdictsTable(const std::string& experiment,
                        const std::vector<ClaimResult>& results) {
  std::string csv =
      "experiment,kind,id,source,statement,level,verdict,effect,ci_low,ci_high,"
      "n,paper_effect,reason,confidence\n";
  auto row = [&](const ClaimResult& result, const LevelResult* level,
                 bool summary) {
    const Claim& claim = *result.claim;
    const std::string effect =
        level ? FormatNumber(level->effect.estimate, 8) : "";
    // A value every seed shares has no interval: a zero-width one would imply
    // a noise estimate (the section prints "no interval" for it too).
    const bool bounded = level && !std::isinf(level->effect.low) &&
                         !std::isinf(level->effect.high) &&
                         !(level->no_spread && level->effect.n >= 2);
    absl::StrAppend(
        &csv, CsvField(experiment), ",", KindName(result), ",",
        CsvField(claim.id()), ",", CsvField(claim.source()), ",",
        CsvField(claim.statement()), ",", summary ? "" : CsvField(level->level),
        ",", VerdictName(summary ? result.verdict : level->verdict), ",",
        effect, ",", bounded ? FormatNumber(level->effect.low, 8) : "", ",",
        bounded ? FormatNumber(level->effect.high, 8) : "", ",",
        level ? absl::StrCat(level->effect.n) : "", ",",
        claim.has_paper_effect() ? FormatNumber(claim.paper_effect(), 8) : "",
        ",", summary ? CsvField(result.reason) : "", ",",
        level ? FormatNumber(level->confidence, 8) : "", "\n");
  };
  for (const ClaimResult& result : results) {
    const bool per_level =
        result.levels.size() > 1 ||
        (!result.levels.empty() && !result.levels[0].level.empty());
    row(result,
        per_level || result.levels.empty() ? nullptr : &result.levels[0], true);
    if (per_level) {
      for (const LevelResult& level : result.levels) row(result, &level, false);
    }
  }
  return *TidyTable::Parse(csv, "verdicts.csv");
}

absl::StatusOr<std::string> SummarizeVerdicts(
    const std::vector<TidyTable>& verdicts) {
  std::vector<std::string> order;
  std::map<std::string, std::map<std::string, int>> counts;
  std::map<std::string, std::pair<int, int>> controls;
  std::map<std::string, int> design;
  for (const TidyTable& table : verdicts) {
    auto experiment = table.Column("experiment");
    auto kind = table.Column("kind");
    auto level = table.Column("level");
    auto verdict = table.Column("verdict");
    for (const auto& status : {experiment.status(), kind.status(),
                               level.status(), verdict.status()}) {
      RETURN_IF_ERROR(status);
    }
    for (const auto& row : table.rows()) {
      const std::string& name = row[*experiment];
      if (std::find(order.begin(), order.end(), name) == order.end()) {
        order.push_back(name);
        counts[name];
        controls[name];
      }
      if (!row[*level].empty()) continue;
      const std::string& v = row[*verdict];
      if (!IsVerdictName(v)) {
        return absl::InvalidArgumentError(absl::StrCat(
            table.name(), ": verdict '", v, "' is not in the vocabulary"));
      }
      if (row[*kind] == "claim") {
        ++counts[name][v];
      } else if (row[*kind] == "design") {
        ++design[name];
      } else if (row[*kind] == "control") {
        ++controls[name].second;
        if (v == "HOLDS") ++controls[name].first;
      } else {
        return absl::InvalidArgumentError(
            absl::StrCat(table.name(), ": kind '", row[*kind], "'"));
      }
    }
  }
  std::string out =
      "| experiment | holds | does not hold | unresolved | not testable | "
      "controls that hold | empirical claims judged | resolved by chance "
      "alone (expected, at most) | checked by construction |\n"
      "|---|---|---|---|---|---|---|---|---|\n";
  int all_judged = 0;
  for (const std::string& name : order) {
    auto& c = counts[name];
    const int judged = c["HOLDS"] + c["DOES NOT HOLD"] + c["UNRESOLVED"];
    all_judged += judged;
    absl::StrAppend(&out, "| [", name, "](#", name, ") | ", c["HOLDS"], " | ",
                    c["DOES NOT HOLD"], " | ", c["UNRESOLVED"], " | ",
                    c["NOT TESTABLE"], " | ", controls[name].first, " / ",
                    controls[name].second, " | ", judged, " | ",
                    absl::StrFormat("%.2g", 0.05 * judged), " | ", design[name],
                    " |\n");
  }
  absl::StrAppend(
      &out,
      "\nEach empirical claim is judged at a 95% family-wise level over its "
      "levels (Bonferroni): its verdict (HOLDS or DOES NOT HOLD) is wrong with "
      "probability at most 5%, so of the ",
      all_judged, " judged here at most about ",
      absl::StrFormat("%.2g", 0.05 * all_judged),
      " verdicts are expected wrong by chance alone; claims are not corrected "
      "across each other. Design statements (checked by construction) and "
      "controls are never counted.\n");
  return out;
}

absl::StatusOr<int> VerifyVerdicts(const ClaimSet& claims,
                                   const TidyTable& verdicts, int min_n) {
  std::map<std::string, std::string> kind_of;
  for (const Claim& control : claims.controls())
    kind_of[control.id()] = "control";
  for (const Claim& claim : claims.claims())
    kind_of[claim.id()] = claim.basis() == BY_DESIGN ? "design" : "claim";
  int columns[8];
  const char* names[8] = {"experiment", "kind", "id",     "level",
                          "verdict",    "n",    "ci_low", "ci_high"};
  for (int i = 0; i < 8; ++i) {
    ASSIGN_OR_RETURN(auto index, verdicts.Column(names[i]));
    columns[i] = index;
  }
  std::map<std::string, int> summary_rows;
  for (const auto& row : verdicts.rows()) {
    const std::string& id = row[columns[2]];
    auto it = kind_of.find(id);
    if (row[columns[0]] != claims.experiment()) {
      return absl::InvalidArgumentError(
          absl::StrCat(verdicts.name(), ": experiment '", row[columns[0]],
                       "', not '", claims.experiment(), "'"));
    }
    if (it == kind_of.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          verdicts.name(), ": '", id, "' is not in the claims file"));
    }
    if (row[columns[1]] != it->second) {
      return absl::InvalidArgumentError(
          absl::StrCat(verdicts.name(), ": ", id, " is a ", it->second,
                       ", not a ", row[columns[1]]));
    }
    const std::string& v = row[columns[4]];
    if (!IsVerdictName(v)) {
      return absl::InvalidArgumentError(
          absl::StrCat(verdicts.name(), ": ", id, ": verdict '", v,
                       "' is not in the vocabulary"));
    }
    if (row[columns[3]].empty()) ++summary_rows[id];
    // A claim's verdict, and each of its levels', rests on a noise estimate:
    // never a zero-width interval.
    if (it->second == "claim" && (v == "HOLDS" || v == "DOES NOT HOLD") &&
        !row[columns[6]].empty() && row[columns[6]] == row[columns[7]]) {
      return absl::InvalidArgumentError(absl::StrCat(
          verdicts.name(), ": claim ", id,
          row[columns[3]].empty() ? "" : " at level " + row[columns[3]], " is ",
          v, " on a zero-width interval"));
    }
    // Every verdict rests on min_n observations, except one NOT TESTABLE
    // without an interval (too few seeds, its n the reason).
    const bool untested_without_interval =
        v == "NOT TESTABLE" && row[columns[6]].empty();
    if (min_n > 0 && !row[columns[5]].empty() && !untested_without_interval) {
      ASSIGN_OR_RETURN(
          const double n,
          ParseNumber(row[columns[5]], absl::StrCat(verdicts.name(), " ", id)));
      if (n < min_n) {
        return absl::InvalidArgumentError(absl::StrCat(verdicts.name(), ": ",
                                                       id, " rests on n = ", n,
                                                       ", fewer than ", min_n));
      }
    }
  }
  for (const auto& [id, kind] : kind_of) {
    if (summary_rows[id] != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat(verdicts.name(), ": ", kind, " ", id, " has ",
                       summary_rows[id], " summary rows, not 1"));
    }
  }
  return static_cast<int>(kind_of.size());
}

}  // namespace sparse_layers::claims
