#include "tools/common/init.h"

#include <cstdio>
#include <cstdlib>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_format.h"
#include "layers/backend/torch_runtime.h"

ABSL_FLAG(int, threads, 2,
          "LibTorch intra-op threads (also OpenMP/OpenBLAS). Results are "
          "bit-identical only for the same value.");

namespace sparse_layers {
namespace {
std::string& ProgramName() {
  static std::string* name = new std::string("program");
  return *name;
}
}  // namespace

std::vector<std::string> InitMain(int argc, char** argv,
                                  absl::string_view usage) {
  absl::SetProgramUsageMessage(usage);
  std::vector<char*> positional = absl::ParseCommandLine(argc, argv);
  std::string program = positional.empty() ? "" : positional[0];
  ProgramName() = program.substr(program.rfind('/') + 1);
  if (absl::Status status =
          backend::SetTorchThreads(absl::GetFlag(FLAGS_threads));
      !status.ok()) {
    std::exit(ExitWithError(status));
  }
  return std::vector<std::string>(positional.begin() + 1, positional.end());
}

int ExitWithError(const absl::Status& status) {
  absl::FPrintF(stderr, "%s: error: %s\n", ProgramName(), status.message());
  return 1;
}

}  // namespace sparse_layers
