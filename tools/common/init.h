// Start-up shared by every binary's main(): parses Abseil flags and sets
// LibTorch's thread count.
#ifndef SPARSE_LAYERS_TOOLS_COMMON_INIT_H_
#define SPARSE_LAYERS_TOOLS_COMMON_INIT_H_

#include <string>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"

// --threads (default 2): LibTorch intra-op threads.
ABSL_DECLARE_FLAG(int, threads);

namespace sparse_layers {

// Parses flags (exits on --help or a bad flag), applies --threads, and returns
// the positional arguments (without argv[0]).
std::vector<std::string> InitMain(int argc, char** argv,
                                  absl::string_view usage);

// Prints `status` as one line "<program>: error: <message>" on stderr and
// returns the exit code 1.
int ExitWithError(const absl::Status& status);

}  // namespace sparse_layers

#endif  // SPARSE_LAYERS_TOOLS_COMMON_INIT_H_
