// The one renderer of experiment sections, as Markdown: the claims file's
// tables (seed_means.h), figures (figures.h), controls apart from the papers'
// claims, and one verdict line per claim with its effect, interval, n, method
// and controls. verdicts.csv and its checks are in verdict_files.h.
#ifndef SPARSE_LAYERS_ANALYSIS_CLAIMS_SECTION_RENDERER_H_
#define SPARSE_LAYERS_ANALYSIS_CLAIMS_SECTION_RENDERER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "analysis/claims/claims.pb.h"
#include "analysis/claims/claims_engine.h"
#include "analysis/claims/figures.h"
#include "analysis/claims/tidy_table.h"

namespace sparse_layers::claims {

// One claim's verdict line(s), Markdown, ending in a newline.
std::string RenderVerdict(const ClaimResult& result);

// The whole section: preamble, tables, figures (written to out_dir), controls,
// claims, notes.
absl::StatusOr<std::string> RenderSection(
    const ClaimSet& claims, const Tables& tables,
    const std::vector<ClaimResult>& results, const RenderOptions& options);

}  // namespace sparse_layers::claims

#endif  // SPARSE_LAYERS_ANALYSIS_CLAIMS_SECTION_RENDERER_H_
