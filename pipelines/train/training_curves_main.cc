// training_curves: loss over training from the trainer's logs as one tidy CSV
// (pipelines/train/training_curves.h).
//
//   training_curves --out=curves.csv --points=10 dense_s1.csv mohd_x2_s1.csv
//   ...
//
// Each log's file name is its run (<arm>_s<seed>.csv). Errors are one line on
// stderr and a non-zero exit.
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/common/file_io.h"
#include "base/common/main.h"
#include "base/common/status_macros.h"
#include "pipelines/train/training_curves.h"

ABSL_FLAG(std::string, out, "", "curves.csv to write.");
ABSL_FLAG(int, points, 10, "Equal bins of steps per run.");

namespace sparse_layers::train {
namespace {

absl::Status Run(const std::vector<std::string>& paths) {
  RETURN_IF_ERROR(RequiredFlag(FLAGS_out));
  if (paths.empty()) return absl::InvalidArgumentError("no logs given");
  std::vector<TrainingLog> logs;
  for (const std::string& path : paths) {
    const size_t slash = path.rfind('/');
    std::string run = path.substr(slash == std::string::npos ? 0 : slash + 1);
    if (!absl::EndsWith(run, ".csv")) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": a log is <run>.csv"));
    }
    run.resize(run.size() - 4);
    ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
    logs.push_back({run, std::move(text)});
  }
  ASSIGN_OR_RETURN(const std::string csv,
                   TrainingCurvesCsv(logs, absl::GetFlag(FLAGS_points)));
  return WriteFileAtomically(absl::GetFlag(FLAGS_out), csv);
}

}  // namespace
}  // namespace sparse_layers::train

int main(int argc, char** argv) {
  const std::vector<std::string> paths = sparse_layers::ParseMainFlags(
      argc, argv,
      "training_curves --out=curves.csv [--points=N] RUN_s<SEED>.csv...");
  return sparse_layers::RunMain(
      [&] { return sparse_layers::train::Run(paths); });
}
