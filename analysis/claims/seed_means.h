// Seed means for the section's tables and figures: each cell or point the
// mean of a metric over seeds with its 95% interval and n (the claims file's
// TableSpec and FigureSpec).
#ifndef SPARSE_LAYERS_ANALYSIS_CLAIMS_SEED_MEANS_H_
#define SPARSE_LAYERS_ANALYSIS_CLAIMS_SEED_MEANS_H_

#include <string>

#include "absl/status/statusor.h"
#include "analysis/claims/claims.pb.h"
#include "analysis/claims/claims_engine.h"
#include "analysis/claims/tidy_table.h"

namespace sparse_layers::claims {

// A number as the section prints it: nan and inf spelled out, whole numbers
// (counts) without exponent, else `digits` significant digits.
std::string FormatNumber(double value, int digits = 4);

// A Markdown table of seed means +- 95% CI half-widths.
absl::StatusOr<std::string> RenderTable(const TableSpec& spec,
                                        const Tables& tables);

// The points of a figure: <group>,<x>,<y>_mean,<y>_ci_low,<y>_ci_high,n (bounds
// empty when n < 2).
absl::StatusOr<TidyTable> FigurePoints(const FigureSpec& spec,
                                       const Tables& tables);

}  // namespace sparse_layers::claims

#endif  // SPARSE_LAYERS_ANALYSIS_CLAIMS_SEED_MEANS_H_
