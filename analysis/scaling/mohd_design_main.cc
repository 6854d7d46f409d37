// mohd_design: the MoHD study's design table (analysis/scaling/mohd_design.h)
// from each variant's merged config.
//
//   mohd_design --out=design.csv dense=dense_s1_config.textproto ...
//
// Errors are one line on stderr and a non-zero exit.
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "analysis/scaling/mohd_design.h"
#include "base/common/file_io.h"
#include "base/common/main.h"
#include "base/common/status_macros.h"
#include "base/common/text_proto.h"
#include "config/experiment.pb.h"

ABSL_FLAG(std::string, out, "", "design.csv to write.");

namespace sparse_layers::analysis {
namespace {

absl::Status Run(const std::vector<std::string>& pairs) {
  RETURN_IF_ERROR(RequiredFlag(FLAGS_out));
  if (pairs.empty()) {
    return absl::InvalidArgumentError(
        "no variants given (VARIANT=merged_config.textproto ...)");
  }
  std::vector<MohdDesign> designs;
  for (const std::string& pair : pairs) {
    const size_t equals = pair.find('=');
    if (equals == std::string::npos || equals == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(pair, ": expected VARIANT=CONFIG"));
    }
    const std::string path = pair.substr(equals + 1);
    ASSIGN_OR_RETURN(const std::string text, ReadFileToString(path));
    config::ExperimentConfig config;
    RETURN_IF_ERROR(ParseTextProto(text, path, &config));
    ASSIGN_OR_RETURN(MohdDesign design,
                     DesignOf(pair.substr(0, equals), config));
    designs.push_back(std::move(design));
  }
  return WriteFileAtomically(absl::GetFlag(FLAGS_out), DesignCsv(designs));
}

}  // namespace
}  // namespace sparse_layers::analysis

int main(int argc, char** argv) {
  const std::vector<std::string> pairs = sparse_layers::ParseMainFlags(
      argc, argv, "mohd_design --out=design.csv VARIANT=CONFIG...");
  return sparse_layers::RunMain(
      [&] { return sparse_layers::analysis::Run(pairs); });
}
