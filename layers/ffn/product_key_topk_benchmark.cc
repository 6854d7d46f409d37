// ProductKeyTopKOfHalves (the fused CPU kernel) against its ATen reference,
// forward alone and with backward, at one product-key layer of the d = 128
// benchmark LM: N = 4096 tokens, C = 8 channels, k = 8, n = 40 (sgatlin, n^2 =
// 1,600) and n = 80 (PEER, 6,400):
//   ./tools/bazel run -c opt //layers/ffn:product_key_topk_benchmark
#include "benchmark/benchmark.h"
#include "layers/ffn/product_key_topk.h"
#include "ops/backend/torch_runtime.h"
#include "torch/torch.h"

namespace sparse_layers::layers {
namespace {

constexpr int64_t kTokens = 4096, kChannels = 8, kTopK = 8;

// Args: {n, fused (1) or reference (0), threads, backward too (1) or not}.
void BM_ProductKeyTopK(benchmark::State& state) {
  const int64_t n = state.range(0);
  const bool fused = state.range(1) != 0;
  if (!backend::SetTorchThreads(static_cast<int>(state.range(2))).ok()) {
    state.SkipWithError("bad thread count");
    return;
  }
  const bool backward = state.range(3) != 0;
  torch::manual_seed(0);
  const torch::Tensor halves =
      torch::randn({kTokens, 2, kChannels, n}).requires_grad_(backward);
  for (auto _ : state) {
    halves.mutable_grad().reset();
    const ProductTopK top =
        fused ? ProductKeyTopKOfHalves(halves, kTopK)
              : ProductKeyTopKReference(halves.select(1, 0),
                                        halves.select(1, 1), kTopK);
    if (backward) top.scores.sum().backward();
  }
  state.counters["rows/s"] = benchmark::Counter(
      kTokens * kChannels * state.iterations(), benchmark::Counter::kIsRate);
  state.SetLabel(std::string(fused ? "fused" : "reference") +
                 (backward ? ", forward + backward" : ", forward"));
}
BENCHMARK(BM_ProductKeyTopK)
    ->ArgsProduct({{40, 80}, {0, 1}, {1, 2}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace sparse_layers::layers

BENCHMARK_MAIN();
