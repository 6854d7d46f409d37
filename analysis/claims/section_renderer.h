// The one renderer of experiment sections: the claims file's tables (mean +-
// 95% CI over seeds, with n), figures (seed means with 95% CI error bars
// through analysis/plot/plot_lines.sh), controls apart from the papers' claims,
// and one verdict line per claim with its effect, interval, n, method and
// controls.
#ifndef SPARSE_LAYERS_ANALYSIS_CLAIMS_SECTION_RENDERER_H_
#define SPARSE_LAYERS_ANALYSIS_CLAIMS_SECTION_RENDERER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "analysis/claims/claims.pb.h"
#include "analysis/claims/claims_engine.h"
#include "analysis/claims/tidy_table.h"

namespace sparse_layers::claims {

struct RenderOptions {
  // Where figures and their point CSVs are written.
  std::string out_dir;
  // analysis/plot/plot_lines.sh; required when the claims file has figures.
  std::string plot_script;
  // analysis/plot/plot_heatmap.sh; required when a figure has a `value`.
  std::string heatmap_script;
};

// A Markdown table of seed means +- 95% CI half-widths.
absl::StatusOr<std::string> RenderTable(const TableSpec& spec,
                                        const Tables& tables);

// The points of a figure: <group>,<x>,<y>_mean,<y>_ci_low,<y>_ci_high,n (bounds
// empty when n < 2).
absl::StatusOr<TidyTable> FigurePoints(const FigureSpec& spec,
                                       const Tables& tables);

// One claim's verdict line(s), Markdown, ending in a newline.
std::string RenderVerdict(const ClaimResult& result);

// The whole section: preamble, tables, figures (written to out_dir), controls,
// claims, notes.
absl::StatusOr<std::string> RenderSection(
    const ClaimSet& claims, const Tables& tables,
    const std::vector<ClaimResult>& results, const RenderOptions& options);

// verdicts.csv:
// experiment,kind,id,source,statement,level,verdict,effect,ci_low,ci_high,n,paper_effect,reason,confidence;
// kind is control, claim or design (a BY_DESIGN claim);
// one row per claim (level empty) and one per level of claims checked at every
// level.
TidyTable VerdictsTable(const std::string& experiment,
                        const std::vector<ClaimResult>& results);

// The combined report's summary: one Markdown row per experiment counting its
// papers' claims (summary rows of kind "claim") by verdict, and its controls
// that hold.
absl::StatusOr<std::string> SummarizeVerdicts(
    const std::vector<TidyTable>& verdicts);

// Checks a section's verdicts.csv against its claims file, as smoke tests need:
// every control and claim has exactly one summary row of the right kind, no row
// names an unknown id, every verdict is in the vocabulary, no claim's summary
// row HOLDS or DOES NOT HOLD on a zero-width interval (a claim over levels
// gives its verdict per level too; those rows are not counted, and the engine
// reads a claim with a level of no spread NOT TESTABLE), and every interval
// rests on at least
// `min_n` observations (0: no check). Returns how many were checked.
absl::StatusOr<int> VerifyVerdicts(const ClaimSet& claims,
                                   const TidyTable& verdicts, int min_n);

}  // namespace sparse_layers::claims

#endif  // SPARSE_LAYERS_ANALYSIS_CLAIMS_SECTION_RENDERER_H_
