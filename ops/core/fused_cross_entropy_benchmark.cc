// Fused (chunked) unembedding + cross-entropy against the unfused reference
// (full logits, then cross_entropy), forward + backward at N = 4096 tokens and
// V = 8192, with the peak bytes each adds (the reference holds several (N, V)
// float tensors of 128 MiB; the fused form one (chunk, V) block):
//   ./tools/bazel run --config=smoke
//   //ops/core:fused_cross_entropy_benchmark
// Counters: tokens/s, peak_MiB (most CPU tensor memory live at once above the
// inputs, over all iterations) and logits_MiB (one (N, V) float tensor).
#include <algorithm>

#include "benchmark/benchmark.h"
#include "ops/backend/allocation_counter.h"
#include "ops/backend/torch_runtime.h"
#include "ops/core/fused_cross_entropy.h"
#include "torch/torch.h"

namespace sparse_layers::layers {
namespace {

constexpr int64_t kTokens = 4096;
constexpr int64_t kVocab = 8192;

// Args: {d, chunk tokens (0: unfused reference), threads}.
void BM_CrossEntropy(benchmark::State& state) {
  const int64_t d = state.range(0), chunk = state.range(1);
  if (!backend::SetTorchThreads(static_cast<int>(state.range(2))).ok()) {
    state.SkipWithError("bad thread count");
    return;
  }
  torch::manual_seed(0);
  const torch::Tensor hidden = torch::randn({kTokens, d}).requires_grad_();
  const torch::Tensor weight =
      (torch::randn({kVocab, d}) * 0.02).requires_grad_();
  const torch::Tensor targets = torch::randint(kVocab, {kTokens}, torch::kLong);
  backend::ScopedAllocationCounter counter;
  int64_t peak = 0;
  for (auto _ : state) {
    // Fresh gradients each step, as after zero_grad(set_to_none).
    hidden.mutable_grad().reset();
    weight.mutable_grad().reset();
    counter.ResetPeak();
    const torch::Tensor loss =
        chunk > 0 ? FusedCrossEntropy(hidden, weight, targets, chunk)
                  : UnfusedCrossEntropy(hidden, weight, targets);
    loss.backward();
    benchmark::DoNotOptimize(weight.grad().data_ptr<float>());
    peak = std::max(peak, counter.PeakExtraBytes());
  }
  constexpr double kMiB = 1 << 20;
  state.counters["tokens/s"] = benchmark::Counter(kTokens * state.iterations(),
                                                  benchmark::Counter::kIsRate);
  state.counters["peak_MiB"] = peak / kMiB;
  state.counters["logits_MiB"] = kTokens * kVocab * 4 / kMiB;
  state.SetLabel(chunk > 0 ? "fused" : "unfused");
}
BENCHMARK(BM_CrossEntropy)
    ->ArgsProduct({{128, 256}, {0, 256, 1024}, {2}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace sparse_layers::layers

BENCHMARK_MAIN();
