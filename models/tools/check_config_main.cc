// Loads and validates experiment configs (merged in order), printing "ok:
// <name>" or one error line. With --out, also writes the merged config as
// canonical text: the single file a pipeline step reads.
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/common/file_io.h"
#include "base/common/main.h"
#include "base/common/status_macros.h"
#include "config/config_loader.h"
#include "google/protobuf/text_format.h"

ABSL_FLAG(std::string, out, "",
          "Write the merged, validated config here (canonical text format).");

namespace sparse_layers::config {
namespace {

absl::Status WriteCanonical(const ExperimentConfig& config,
                            const std::string& path) {
  std::string text;
  if (!google::protobuf::TextFormat::PrintToString(config, &text)) {
    return absl::InternalError("cannot print the merged config");
  }
  return WriteFileAtomically(
      path, "# Merged and validated by //models/tools:check_config.\n" + text);
}

absl::Status Run(const std::vector<std::string>& paths) {
  if (paths.empty()) return absl::InvalidArgumentError("no config file given");
  RETURN_IF_ERROR(FilesExist("config", paths));
  ASSIGN_OR_RETURN(const ExperimentConfig config, LoadExperimentConfig(paths));
  if (const std::string out = absl::GetFlag(FLAGS_out); !out.empty()) {
    RETURN_IF_ERROR(WriteCanonical(config, out));
  }
  std::printf("ok: %s\n", config.name().c_str());
  return absl::OkStatus();
}

}  // namespace
}  // namespace sparse_layers::config

int main(int argc, char** argv) {
  const std::vector<std::string> paths = sparse_layers::ParseMainFlags(
      argc, argv,
      "check_config FILE.textproto [OVERLAY.textproto ...] [--out=MERGED]: "
      "validate (and merge) ExperimentConfig files");
  return sparse_layers::RunMain(
      [&] { return sparse_layers::config::Run(paths); });
}
