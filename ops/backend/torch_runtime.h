// Process-wide LibTorch settings: thread count and the BLAS behind matmul.
// Every binary sets the threads explicitly: the project promises bit-identical
// outputs for the same config and thread count, and only for a fixed count.
#ifndef SPARSE_LAYERS_OPS_BACKEND_TORCH_RUNTIME_H_
#define SPARSE_LAYERS_OPS_BACKEND_TORCH_RUNTIME_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace sparse_layers::backend {

// Sets LibTorch's intra-op and inter-op threads (which also bounds OpenMP,
// hence OpenBLAS).
absl::Status SetTorchThreads(int threads);

// Resolved path of the shared library whose sgemm_ this process calls (the BLAS
// behind LibTorch's float matmul), found the way the dynamic linker binds it.
absl::StatusOr<std::string> SgemmProvider();

// Whether `library_path` is Debian's reference (netlib) BLAS, which is about
// 15x slower than OpenBLAS.
bool IsReferenceBlas(absl::string_view library_path);

}  // namespace sparse_layers::backend

#endif  // SPARSE_LAYERS_OPS_BACKEND_TORCH_RUNTIME_H_
