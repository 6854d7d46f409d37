// Forward + backward of causal attention at the training sizes: the block
// kernel against the dense reference, with the peak extra memory of each.
// Benchmark only: `./tools/bazel run
// //ops/core:block_causal_attention_benchmark`.
#include <algorithm>

#include "benchmark/benchmark.h"
#include "ops/backend/allocation_counter.h"
#include "ops/backend/torch_runtime.h"
#include "ops/core/block_causal_attention.h"

namespace sparse_layers::layers {
namespace {

constexpr int64_t kBatch = 16;
constexpr int64_t kLength = 256;

// Args: {d_model, heads, block rows (0: dense reference), threads}.
void BM_CausalAttention(benchmark::State& state) {
  const int64_t d = state.range(0), heads = state.range(1),
                block = state.range(2);
  if (!backend::SetTorchThreads(static_cast<int>(state.range(3))).ok()) {
    state.SkipWithError("bad thread count");
    return;
  }
  torch::manual_seed(0);
  const auto make = [&] {
    return torch::randn({kBatch, heads, kLength, d / heads}).requires_grad_();
  };
  const torch::Tensor q = make(), k = make(), v = make();
  const torch::Tensor upstream =
      torch::randn({kBatch, heads, kLength, d / heads});
  backend::ScopedAllocationCounter counter;
  int64_t peak = 0;
  for (auto _ : state) {
    for (const torch::Tensor& x : {q, k, v}) x.mutable_grad().reset();
    counter.ResetPeak();
    const torch::Tensor output = block > 0
                                     ? BlockCausalAttention(q, k, v, block)
                                     : DenseCausalAttention(q, k, v);
    (output * upstream).sum().backward();
    benchmark::DoNotOptimize(q.grad().data_ptr<float>());
    peak = std::max(peak, counter.PeakExtraBytes());
  }
  state.counters["tokens/s"] = benchmark::Counter(
      kBatch * kLength * state.iterations(), benchmark::Counter::kIsRate);
  state.counters["peak_MiB"] = peak / double(1 << 20);
  state.SetLabel(block > 0 ? "block" : "dense");
}
// The two training_throughput sizes: d=128 with 4 heads, d=256 with 8.
BENCHMARK(BM_CausalAttention)
    ->ArgsProduct({{128}, {4}, {0, 32, 64, 128}, {2}})
    ->ArgsProduct({{256}, {8}, {0, 32, 64, 128}, {2}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace sparse_layers::layers

BENCHMARK_MAIN();
