// Start-up shared by every LibTorch binary's main(): parses Abseil flags, sets
// LibTorch's thread count and installs the caching CPU allocator
// (caching_cpu_allocator.h). The one-line error exit and the top-level
// handler (RunMain) come from main.h.
#ifndef SPARSE_LAYERS_OPS_BACKEND_TORCH_INIT_H_
#define SPARSE_LAYERS_OPS_BACKEND_TORCH_INIT_H_

#include <string>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/strings/string_view.h"
#include "base/common/main.h"

// --threads (default 2): LibTorch intra-op threads.
ABSL_DECLARE_FLAG(int, threads);

namespace sparse_layers {

// ParseMainFlags, then applies --threads (one error line and exit 1 if it is
// out of range) and installs the caching CPU allocator.
std::vector<std::string> InitMain(int argc, char** argv,
                                  absl::string_view usage);

}  // namespace sparse_layers

#endif  // SPARSE_LAYERS_OPS_BACKEND_TORCH_INIT_H_
