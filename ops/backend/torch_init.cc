#include "ops/backend/torch_init.h"

#include <cstdlib>

#include "absl/flags/flag.h"
#include "ops/backend/caching_cpu_allocator.h"
#include "ops/backend/torch_runtime.h"

ABSL_FLAG(int, threads, 2,
          "LibTorch intra-op threads (also OpenMP/OpenBLAS). Results are "
          "bit-identical only for the same value.");

namespace sparse_layers {

std::vector<std::string> InitMain(int argc, char** argv,
                                  absl::string_view usage) {
  std::vector<std::string> positional = ParseMainFlags(argc, argv, usage);
  if (absl::Status status =
          backend::SetTorchThreads(absl::GetFlag(FLAGS_threads));
      !status.ok()) {
    std::exit(ExitWithError(status));
  }
  backend::UseCachingCpuAllocator();
  return positional;
}

}  // namespace sparse_layers
