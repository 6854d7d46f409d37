// What judge_claims does, as a library: load the claims file and the tidy
// tables, judge, render, and write the merged tables and verdicts.csv. The
// binary's main only parses its flags.
#ifndef SPARSE_LAYERS_ANALYSIS_CLAIMS_JUDGE_H_
#define SPARSE_LAYERS_ANALYSIS_CLAIMS_JUDGE_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "analysis/claims/claims.pb.h"

namespace sparse_layers::claims {

struct JudgeOptions {
  std::string claims_path;
  std::string out_dir;
  std::string plot_script;
  std::string heatmap_script;
  // Table name (e.g. "frontier.csv") -> the CSV files concatenated into it.
  std::vector<std::pair<std::string, std::vector<std::string>>> tables;
  // Arms the experiment does not train at this scale: their claims are NOT
  // TESTABLE (JudgeClaimSet).
  std::vector<std::string> arms_not_run;
};

// Parses a claims textproto; errors name file:line:column.
absl::StatusOr<ClaimSet> LoadClaimSet(const std::string& path);

// Parses "name.csv=a.csv,b.csv" into a table entry.
absl::StatusOr<std::pair<std::string, std::vector<std::string>>> ParseTableFlag(
    const std::string& value);

// Judges and renders; writes <out_dir>/<table> for every table and
// <out_dir>/verdicts.csv. Returns the section's Markdown.
absl::StatusOr<std::string> Judge(const JudgeOptions& options);

// Checks against the claims file either a whole section directory
// (CheckSection: the experiment's smoke check, `seeds` its study's seeds) or
// one verdicts.csv (VerifyVerdicts); a line saying what was checked.
absl::StatusOr<std::string> Verify(const std::string& claims_path,
                                   const std::string& path,
                                   const std::vector<std::string>& seeds,
                                   int min_n);

// The summary rows of several verdicts.csv files (SummarizeVerdicts).
absl::StatusOr<std::string> Summarize(
    const std::vector<std::string>& verdict_paths);

}  // namespace sparse_layers::claims

#endif  // SPARSE_LAYERS_ANALYSIS_CLAIMS_JUDGE_H_
