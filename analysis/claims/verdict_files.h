// The verdict files: verdicts.csv of a section, the combined report's summary
// rows over several, and the smoke check of one against its claims file.
#ifndef SPARSE_LAYERS_ANALYSIS_CLAIMS_VERDICT_FILES_H_
#define SPARSE_LAYERS_ANALYSIS_CLAIMS_VERDICT_FILES_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "analysis/claims/claims.pb.h"
#include "analysis/claims/claims_engine.h"
#include "analysis/claims/tidy_table.h"

namespace sparse_layers::claims {

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
// reads a claim with a level of no spread NOT TESTABLE), and every verdict but
// a NOT TESTABLE one without an interval rests on at least `min_n`
// observations (0: no check). Returns how many were checked.
absl::StatusOr<int> VerifyVerdicts(const ClaimSet& claims,
                                   const TidyTable& verdicts, int min_n);

}  // namespace sparse_layers::claims

#endif  // SPARSE_LAYERS_ANALYSIS_CLAIMS_VERDICT_FILES_H_
