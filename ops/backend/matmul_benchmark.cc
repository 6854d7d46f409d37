// Float matmul throughput through LibTorch, to confirm the BLAS in use
// (OpenBLAS ~100 GFLOP/s per core here, Debian's reference BLAS ~6.5). Run:
// ./tools/bazel run //ops/backend:matmul_benchmark
#include <cstdio>

#include "benchmark/benchmark.h"
#include "ops/backend/torch_runtime.h"
#include "torch/torch.h"

namespace sparse_layers::backend {
namespace {

// Args: {matrix size n, threads}.
void BM_Matmul(benchmark::State& state) {
  const int64_t n = state.range(0);
  if (!SetTorchThreads(static_cast<int>(state.range(1))).ok()) {
    state.SkipWithError("bad thread count");
    return;
  }
  torch::manual_seed(0);
  torch::Tensor a = torch::randn({n, n});
  torch::Tensor b = torch::randn({n, n});
  torch::Tensor c = torch::empty({n, n});
  for (auto _ : state) {
    torch::matmul_out(c, a, b);
    benchmark::DoNotOptimize(c.data_ptr<float>());
  }
  state.counters["GFLOP/s"] = benchmark::Counter(
      2.0 * n * n * n * state.iterations() / 1e9, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Matmul)
    ->Args({256, 1})
    ->Args({1024, 1})
    ->Args({1024, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace sparse_layers::backend

int main(int argc, char** argv) {
  absl::StatusOr<std::string> blas = sparse_layers::backend::SgemmProvider();
  std::fprintf(stderr, "sgemm_ from: %s\n",
               blas.ok() ? blas->c_str() : "unknown");
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
