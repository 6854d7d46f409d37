// The section's figures: each FigureSpec's seed-mean points written beside it
// and drawn through analysis/plot (plot_lines.sh, or plot_heatmap.sh for a
// heat map), with its reference lines.
#ifndef SPARSE_LAYERS_ANALYSIS_CLAIMS_FIGURES_H_
#define SPARSE_LAYERS_ANALYSIS_CLAIMS_FIGURES_H_

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

// The --hline arguments of a figure's reference lines: a column's value is the
// mean over seeds of its one value per seed among the figure's rows; a line
// with rows of its own (table, where) is the mean over seeds of its column
// (the figure's y by default) there, as a claim's arm; a paper's number is a
// --paper_hline.
absl::StatusOr<std::vector<std::string>> ReferenceLineArguments(
    const FigureSpec& spec, const Tables& tables);

// Draws every figure of `claims` into options.out_dir; returns the section's
// lines naming them (drawn, heat maps, not drawn for want of rows).
absl::StatusOr<std::string> DrawFigures(const ClaimSet& claims,
                                        const Tables& tables,
                                        const RenderOptions& options);

}  // namespace sparse_layers::claims

#endif  // SPARSE_LAYERS_ANALYSIS_CLAIMS_FIGURES_H_
