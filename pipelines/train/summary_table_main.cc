// summary_table: trainer summaries and their merged configs as one tidy CSV
// (one row per run) for the claims engine (analysis/claims).
//
//   summary_table --out=runs.csv
//       --fields=validation_loss,validation_perplexity
//       --config_fields=seed=runtime.seed,model.d_model
//       a_s1.summary.textproto a_s1_config.textproto ...
//
// Errors are one line on stderr and a non-zero exit.
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "base/common/file_io.h"
#include "base/common/main.h"
#include "base/common/output_paths.h"
#include "base/common/status_macros.h"
#include "pipelines/train/summary_table.h"

ABSL_FLAG(std::string, out, "", "CSV path (default: stdout)");
ABSL_FLAG(std::vector<std::string>, fields, {},
          "TrainingSummary fields, each field or column=field");
ABSL_FLAG(std::vector<std::string>, config_fields, {},
          "ExperimentConfig dotted paths, each path or column=path (every "
          "summary then needs the config of its name)");
ABSL_FLAG(std::vector<std::string>, constant_columns, {},
          "Columns of one value for every row, each column=value");
ABSL_FLAG(std::string, arm_column, "arm",
          "Column of the run's name without its _s<N> seed suffix; empty: "
          "none");
ABSL_FLAG(bool, name_from_path, false,
          "Name each run by its file (<run>.summary.textproto, "
          "<run>_config.textproto) instead of the name inside it");

namespace sparse_layers::train {
namespace {

absl::Status Run(const std::vector<std::string>& paths) {
  if (paths.empty()) {
    return absl::InvalidArgumentError("no summary or config files given");
  }
  RETURN_IF_ERROR(FirstError(
      {FilesExist("summary or config", paths),
       OutputIsNotAnInput("--out", absl::GetFlag(FLAGS_out), paths)}));
  SummaryTableOptions options;
  options.fields = absl::GetFlag(FLAGS_fields);
  options.config_fields = absl::GetFlag(FLAGS_config_fields);
  options.constant_columns = absl::GetFlag(FLAGS_constant_columns);
  options.arm_column = absl::GetFlag(FLAGS_arm_column);
  options.name_from_path = absl::GetFlag(FLAGS_name_from_path);
  ASSIGN_OR_RETURN(const std::string csv,
                   SummaryTableFromFiles(options, paths));
  const std::string out = absl::GetFlag(FLAGS_out);
  if (out.empty()) {
    std::fputs(csv.c_str(), stdout);
    return absl::OkStatus();
  }
  return WriteFileAtomically(out, csv);
}

}  // namespace
}  // namespace sparse_layers::train

int main(int argc, char** argv) {
  // No LibTorch here (ops/backend:torch_init would link it): a table needs
  // none.
  const std::vector<std::string> paths = sparse_layers::ParseMainFlags(
      argc, argv,
      "summary_table --out=F.csv --fields=f,... [--config_fields=p,...] "
      "SUMMARY_OR_CONFIG...");
  return sparse_layers::RunMain(
      [&] { return sparse_layers::train::Run(paths); });
}
