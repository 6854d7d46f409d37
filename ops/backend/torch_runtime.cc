#include "ops/backend/torch_runtime.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>

#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "torch/torch.h"

namespace sparse_layers::backend {

absl::Status SetTorchThreads(int threads) {
  if (threads < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("threads must be >= 1, got ", threads));
  }
  torch::set_num_threads(threads);
  // Inter-op threads can only be set once, before the pool starts.
  static const bool kInterOpSet = [threads] {
    torch::set_num_interop_threads(threads);
    return true;
  }();
  (void)kInterOpSet;
  return absl::OkStatus();
}

absl::StatusOr<std::string> SgemmProvider() {
  // RTLD_DEFAULT searches the global scope in load order: the same binding
  // LibTorch's sgemm_ call gets.
  void* symbol = dlsym(RTLD_DEFAULT, "sgemm_");
  if (symbol == nullptr) {
    return absl::NotFoundError("no sgemm_ symbol in this process");
  }
  Dl_info info;
  if (dladdr(symbol, &info) == 0 || info.dli_fname == nullptr) {
    return absl::InternalError("dladdr failed for sgemm_");
  }
  char resolved[PATH_MAX];
  if (realpath(info.dli_fname, resolved) == nullptr) {
    return std::string(info.dli_fname);
  }
  return std::string(resolved);
}

bool IsReferenceBlas(absl::string_view library_path) {
  // Debian's netlib BLAS is .../blas/libblas.so.3; OpenBLAS is .../openblas-*/
  // or libopenblas*.
  return absl::StrContains(library_path, "/blas/libblas.so");
}

}  // namespace sparse_layers::backend
