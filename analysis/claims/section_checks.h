// The smoke check of a built section, as data: the claims file's TableChecks
// (each declared arm x seed x level present, values finite and in range), its
// tables' titles in section.md, its figures drawn, its listed files written,
// and one verdict per claim (VerifyVerdicts). One check for every experiment;
// nothing experiment-specific lives in shell.
#ifndef SPARSE_LAYERS_ANALYSIS_CLAIMS_SECTION_CHECKS_H_
#define SPARSE_LAYERS_ANALYSIS_CLAIMS_SECTION_CHECKS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "analysis/claims/claims.pb.h"
#include "analysis/claims/tidy_table.h"

namespace sparse_layers::claims {

// The file in a section directory listing the arms (or column=value filters)
// the active scale does not run, one a line (judge_claims --arms_not_run).
inline constexpr char kArmsNotRunFile[] = "arms_not_run.txt";

// One TableCheck on its table; `seeds` replaces "$seeds" in ColumnValues.
// The error names the table, the check's `why` and the first offending row.
absl::Status CheckTable(const TableCheck& check, const TidyTable& table,
                        const std::vector<std::string>& seeds);

// Every check of a section directory written by judge_claims: its tables
// (<dir>/<table>), section.md, figures (but those section.md lists as not
// drawn for want of rows), files and verdicts.csv (with VerifyVerdicts'
// `min_n`). A table check filtered on an arm the section was judged without
// (<dir>/kArmsNotRunFile, "base=swiglu" a line) is skipped: its rows are
// absent by design, which the claims engine checks. Returns a line saying what
// was checked.
absl::StatusOr<std::string> CheckSection(const ClaimSet& claims,
                                         const std::string& section_dir,
                                         const std::vector<std::string>& seeds,
                                         int min_n);

}  // namespace sparse_layers::claims

#endif  // SPARSE_LAYERS_ANALYSIS_CLAIMS_SECTION_CHECKS_H_
