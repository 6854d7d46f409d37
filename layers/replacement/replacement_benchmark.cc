// Forward + backward time of the sparse replacement layers, each against the
// same layer decoding a dense, materialised code (zeros scattered out to the
// full width, then a dense matmul). Numbers go in notes:
//   ./tools/bazel run //layers/replacement:replacement_benchmark
#include "benchmark/benchmark.h"
#include "layers/replacement/nmse.h"
#include "layers/replacement/sparse_replacement.h"
#include "ops/backend/torch_runtime.h"

namespace sparse_layers::layers {
namespace {

constexpr int64_t kTokens = 1024;
constexpr int64_t kK = 32;

// Args: {d_model, width (TC) or experts (MxD), sparse (1) or dense (0)}.
ReplacementOptions Options(const benchmark::State& state, bool mxd) {
  ReplacementOptions options;
  options.d_in = options.d_out = state.range(0);
  options.d_ffn = mxd ? 4 * state.range(0) : state.range(1);
  options.n_experts = mxd ? state.range(1) : 0;
  options.top_k = kK;
  return options;
}

void Run(benchmark::State& state, SparseReplacementImpl& layer) {
  (void)backend::SetTorchThreads(2);
  torch::manual_seed(0);
  const torch::Tensor x = torch::randn({kTokens, state.range(0)});
  const torch::Tensor y = torch::randn({kTokens, state.range(0)});
  const bool sparse = state.range(2) == 1;
  for (auto _ : state) {
    layer.zero_grad();
    const TopKCodes codes = layer.Encode(x, kK);
    const torch::Tensor out =
        sparse ? layer.DecodeSparse(x, codes)
               : layer.DecodeDense(x, Densify(codes, layer.units()));
    NormalisedMse(out, y).backward();
  }
  state.counters["tokens/s"] = benchmark::Counter(kTokens * state.iterations(),
                                                  benchmark::Counter::kIsRate);
  state.SetLabel(sparse ? "sparse (embedding_bag)" : "dense materialised");
}

void BM_Transcoder(benchmark::State& state) {
  TranscoderImpl layer(Options(state, false), false);
  Run(state, layer);
}

void BM_MxdGelu(benchmark::State& state) {
  MxdImpl layer(Options(state, true), MxdImpl::Encoder::kGelu);
  Run(state, layer);
}

BENCHMARK(BM_Transcoder)
    ->ArgsProduct({{128}, {4096}, {0, 1}})
    ->ArgsProduct({{256}, {16384}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_MxdGelu)
    ->ArgsProduct({{128}, {3584}, {0, 1}})
    ->ArgsProduct({{256}, {14336}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace sparse_layers::layers

BENCHMARK_MAIN();
