// probing_vs_fidelity: each probed fit's mean sparse-probing F1 beside its
// CE recovered, NMSE and L0 (probing_vs_fidelity.h), for the claims engine.
//
//   probing_vs_fidelity --probing=p1.csv,p2.csv --frontier=a1.csv,a2.csv
//     --out=usefulness.csv
//
// Errors are one line on stderr and a non-zero exit.
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "analysis/claims/tidy_table.h"
#include "analysis/replacement/probing_vs_fidelity.h"
#include "base/common/file_io.h"
#include "base/common/main.h"
#include "base/common/status_macros.h"

ABSL_FLAG(std::vector<std::string>, probing, {},
          "sparse_probe tables (--out) with the same header.");
ABSL_FLAG(std::vector<std::string>, frontier, {},
          "evaluate_replacements tables (--out) holding every probed fit.");
ABSL_FLAG(std::string, out, "", "The joined table.");

namespace sparse_layers::analysis {
namespace {

absl::Status Run() {
  RETURN_IF_ERROR(
      FirstError({RequiredFlag(FLAGS_probing), RequiredFlag(FLAGS_frontier),
                  RequiredFlag(FLAGS_out)}));
  ASSIGN_OR_RETURN(
      const claims::TidyTable probing,
      claims::TidyTable::ReadConcatenated(absl::GetFlag(FLAGS_probing)));
  ASSIGN_OR_RETURN(
      const claims::TidyTable frontier,
      claims::TidyTable::ReadConcatenated(absl::GetFlag(FLAGS_frontier)));
  ASSIGN_OR_RETURN(const std::string csv, ProbingVsFidelity(probing, frontier));
  return WriteFileAtomically(absl::GetFlag(FLAGS_out), csv);
}

}  // namespace
}  // namespace sparse_layers::analysis

int main(int argc, char** argv) {
  // No LibTorch: tables need none.
  sparse_layers::ParseMainFlags(
      argc, argv,
      "probing_vs_fidelity --probing=F[,F...] --frontier=F[,F...] --out=F");
  return sparse_layers::RunMain(sparse_layers::analysis::Run);
}
