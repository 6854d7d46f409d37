// frontier_gap: each non-TopK fit of frontier tables placed against the TopK
// frontier of its layer, base and seed at its own L0 (frontier_gap.h; MxD
// arXiv:2505.21364 Fig. 18), for the claims engine.
//
//   frontier_gap --frontier=a.csv,b.csv --out=gap.csv
//
// Errors are one line on stderr and a non-zero exit.
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/str_join.h"
#include "analysis/claims/tidy_table.h"
#include "analysis/replacement/frontier_gap.h"
#include "base/common/file_io.h"
#include "base/common/main.h"
#include "base/common/status_macros.h"

ABSL_FLAG(
    std::vector<std::string>, frontier, {},
    "Frontier tables (evaluate_replacements --out) with the same header.");
ABSL_FLAG(std::string, out, "", "The gap table.");

namespace sparse_layers::analysis {
namespace {

absl::Status Run() {
  RETURN_IF_ERROR(
      FirstError({RequiredFlag(FLAGS_frontier), RequiredFlag(FLAGS_out)}));
  ASSIGN_OR_RETURN(
      const claims::TidyTable frontier,
      claims::TidyTable::ReadConcatenated(absl::GetFlag(FLAGS_frontier)));
  std::vector<std::string> outside;
  ASSIGN_OR_RETURN(const std::string csv, FrontierGap(frontier, &outside));
  if (!outside.empty()) {
    std::fprintf(stderr,
                 "frontier_gap: outside their TopK frontier's L0 range, not "
                 "compared: %s\n",
                 absl::StrJoin(outside, ", ").c_str());
  }
  return WriteFileAtomically(absl::GetFlag(FLAGS_out), csv);
}

}  // namespace
}  // namespace sparse_layers::analysis

int main(int argc, char** argv) {
  // No LibTorch: a table needs none.
  sparse_layers::ParseMainFlags(argc, argv,
                                "frontier_gap --frontier=F[,F...] --out=F");
  return sparse_layers::RunMain(sparse_layers::analysis::Run);
}
