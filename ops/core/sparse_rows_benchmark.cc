// SparseDot and SparseDecode (the fused CPU kernels) against their references
// (index_select-multiply-sum, embedding_bag), forward + backward at the shapes
// of one sgatlin layer of the d = 256 benchmark LM: N = 4096 tokens, C k = 64
// selected rows each out of 12,800 (C = 8 channels of n^2 = 1,600), width 256:
//   ./tools/bazel run //ops/core:sparse_rows_benchmark
#include "benchmark/benchmark.h"
#include "ops/backend/torch_runtime.h"
#include "ops/core/topk.h"
#include "torch/torch.h"

namespace sparse_layers::layers {
namespace {

constexpr int64_t kTokens = 4096, kSelected = 64, kRows = 12800;

// Args: {width, fused (1) or reference (0), threads}.
void RunSparseRows(benchmark::State& state, bool decode) {
  const int64_t width = state.range(0);
  const bool fused = state.range(1) != 0;
  if (!backend::SetTorchThreads(static_cast<int>(state.range(2))).ok()) {
    state.SkipWithError("bad thread count");
    return;
  }
  torch::manual_seed(0);
  const torch::Tensor x = torch::randn({kTokens, width}).requires_grad_();
  const torch::Tensor weights =
      torch::randn({kTokens, kSelected}).requires_grad_();
  const torch::Tensor rows = torch::randn({kRows, width}).requires_grad_();
  const torch::Tensor indices =
      torch::randint(kRows, {kTokens, kSelected}, torch::kLong);
  for (auto _ : state) {
    x.mutable_grad().reset();
    weights.mutable_grad().reset();
    rows.mutable_grad().reset();
    torch::Tensor y;
    if (decode) {
      y = fused ? SparseDecode({weights, indices}, rows)
                : SparseDecodeReference({weights, indices}, rows);
    } else {
      y = fused ? SparseDot(x, rows, indices)
                : SparseDotReference(x, rows, indices);
    }
    y.sum().backward();
  }
  state.counters["tokens/s"] = benchmark::Counter(kTokens * state.iterations(),
                                                  benchmark::Counter::kIsRate);
  state.SetLabel(fused ? "fused" : "reference");
}

void BM_SparseDot(benchmark::State& state) { RunSparseRows(state, false); }
void BM_SparseDecode(benchmark::State& state) { RunSparseRows(state, true); }

BENCHMARK(BM_SparseDot)
    ->ArgsProduct({{128, 256}, {0, 1}, {1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_SparseDecode)
    ->ArgsProduct({{128, 256}, {0, 1}, {1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace sparse_layers::layers

BENCHMARK_MAIN();
