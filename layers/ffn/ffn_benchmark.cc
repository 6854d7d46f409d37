// Forward + backward of the sparse FFNs against dense, materialised
// references of the same maths (every expert / neuron computed, then masked):
//   ./tools/bazel run //layers/ffn:ffn_benchmark
#include "benchmark/benchmark.h"
#include "layers/attention/lorsa.h"
#include "layers/ffn/mixture_of_experts.h"
#include "layers/ffn/sgatlin.h"
#include "layers/mohd/mohd.h"
#include "ops/backend/torch_runtime.h"

namespace sparse_layers::layers {
namespace {

constexpr int64_t kTokens = 1024;

// Args: {d_model, experts, sparse (1) or dense reference (0)}; top-2, D = 4d.
void BM_MixtureOfExperts(benchmark::State& state) {
  (void)backend::SetTorchThreads(2);
  torch::manual_seed(0);
  MixtureOptions options;
  options.d_model = state.range(0);
  options.d_ffn = 4 * state.range(0);
  options.n_experts = state.range(1);
  options.top_k = 2;
  options.activation = Activation::kRelu;
  options.router = MixtureOptions::Router::kSparsityAware;
  MixtureOfExpertsImpl moe(options);
  moe.eval();
  const torch::Tensor x = torch::randn({kTokens, options.d_model});
  HookPoint none;
  for (auto _ : state) {
    moe.zero_grad();
    const torch::Tensor y =
        state.range(2) ? moe.Forward(x, none) : moe.ForwardDense(x);
    y.pow(2).mean().backward();
  }
  state.counters["tokens/s"] = benchmark::Counter(kTokens * state.iterations(),
                                                  benchmark::Counter::kIsRate);
  state.SetLabel(state.range(2) ? "sparse dispatch" : "dense masked");
}
BENCHMARK(BM_MixtureOfExperts)
    ->ArgsProduct({{128}, {8}, {0, 1}})
    ->ArgsProduct({{256}, {32}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Args: {d_model, neurons per channel, sparse (1) or dense reference (0)};
// C = 8 channels, k = 8.
void BM_Sgatlin(benchmark::State& state) {
  (void)backend::SetTorchThreads(2);
  torch::manual_seed(0);
  ProductKeyOptions options;
  options.d_model = state.range(0);
  options.d_ffn = state.range(1);
  options.channels = 8;
  options.top_k = 8;
  options.d_key = 64;
  ProductKeyFfnImpl layer(options);
  const torch::Tensor z = torch::randn({kTokens, options.d_model});
  HookPoint none;
  for (auto _ : state) {
    layer.zero_grad();
    torch::Tensor y;
    if (state.range(2)) {
      y = layer.Forward(z, none);
    } else {
      // Every neuron's w_in . z, gated at the selected ones, then one dense
      // decode: the materialised form of the same sum.
      const ProductTopK routing = layer.Route(z);
      const torch::Tensor rows =
          routing.indices +
          torch::arange(8, routing.indices.options()).view({1, 8, 1}) *
              options.d_ffn;
      const torch::Tensor all =
          torch::matmul(z, layer.experts_in.t());  // (N, C*d_ffn)
      const torch::Tensor gated = torch::zeros_like(all).scatter(
          1, rows.view({kTokens, -1}),
          all.gather(1, rows.view({kTokens, -1})) *
              routing.scores.view({kTokens, -1}));
      y = torch::matmul(gated, layer.experts_out);
    }
    y.pow(2).mean().backward();
  }
  state.counters["tokens/s"] = benchmark::Counter(kTokens * state.iterations(),
                                                  benchmark::Counter::kIsRate);
  state.SetLabel(state.range(2) ? "sparse gather" : "dense masked");
}
// Args: {channels, n, fused (1) or the topk-of-topk reference (0)}; 4096
// tokens, k = 8, forward and backward of the selected scores.
void BM_ProductKeyTopK(benchmark::State& state) {
  (void)backend::SetTorchThreads(2);
  torch::manual_seed(0);
  const int64_t c = state.range(0), n = state.range(1);
  const torch::Tensor s = torch::randn({4096, 2, c, n}, torch::requires_grad());
  for (auto _ : state) {
    const ProductTopK routing =
        state.range(2)
            ? ProductKeyTopKOfHalves(s, 8)
            : ProductKeyTopKReference(s.select(1, 0), s.select(1, 1), 8);
    torch::autograd::grad({routing.scores.sum()}, {s});
  }
  state.SetLabel(state.range(2) ? "fused" : "reference");
}
BENCHMARK(BM_ProductKeyTopK)
    ->ArgsProduct({{8}, {40, 80}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

BENCHMARK(BM_Sgatlin)
    ->ArgsProduct({{128}, {1024}, {0, 1}})
    ->ArgsProduct({{256}, {4096}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// D = range(0), N = range(1), K = N / 4 with one shared; seeds and threads.
MohdOptions MohdBenchmarkOptions(const benchmark::State& state) {
  (void)backend::SetTorchThreads(2);
  torch::manual_seed(0);
  MohdOptions options;
  options.d_model = state.range(0);
  options.sub_dims = state.range(1);
  options.top_k = state.range(1) / 4;
  options.shared = 1;
  return options;
}

// Args: {D, sub-dims N, gather-sparse (1) or masked-dense (0)}; K = N / 4
// active (one shared), d_ff = 4 D / 4 = D (compression to 25%).
void BM_MohdFfn(benchmark::State& state) {
  const MohdOptions options = MohdBenchmarkOptions(state);
  MohdFfnImpl ffn(options, state.range(0), 1);
  ffn.gather_sparse = state.range(2) == 1;
  const torch::Tensor x = torch::randn({kTokens, options.d_model});
  HookPoint none;
  for (auto _ : state) {
    ffn.zero_grad();
    ffn.Forward(x, none).pow(2).mean().backward();
  }
  state.counters["tokens/s"] = benchmark::Counter(kTokens * state.iterations(),
                                                  benchmark::Counter::kIsRate);
  state.SetLabel(state.range(2) ? "gather sparse" : "masked dense");
}
// Args: {D, sub-dims N, gather-sparse (1) or masked-dense (0)}; K = N / 4
// active (one shared), inner width D / 4 with 4 heads, 8 sequences of 128.
void BM_MohdAttention(benchmark::State& state) {
  const MohdOptions options = MohdBenchmarkOptions(state);
  MohdAttention attention(options, state.range(0) / 4, 4, 128, 1);
  attention->gather_sparse = state.range(2) == 1;
  const torch::Tensor x = torch::randn({8, 128, options.d_model});
  for (auto _ : state) {
    attention->zero_grad();
    attention->forward(x).pow(2).mean().backward();
  }
  state.counters["tokens/s"] = benchmark::Counter(8 * 128 * state.iterations(),
                                                  benchmark::Counter::kIsRate);
  state.SetLabel(state.range(2) ? "gather sparse" : "masked dense");
}
// Args: {d, QK heads, sparse output decode (1) or dense (0)}; G = D_QK = 32,
// K = 32 active heads, T = 128, 8 sequences.
void BM_Lorsa(benchmark::State& state) {
  (void)backend::SetTorchThreads(2);
  torch::manual_seed(0);
  LorsaOptions options;
  options.d_model = state.range(0);
  options.qk_heads = state.range(1);
  options.qk_dim = 32;
  options.ov_heads = 32 * state.range(1);
  options.top_k = 32;
  options.context_length = 128;
  Lorsa lorsa(options);
  lorsa->dense_output = state.range(2) == 0;
  const torch::Tensor x = torch::randn({8, 128, options.d_model});
  for (auto _ : state) {
    lorsa->zero_grad();
    lorsa->forward(x).pow(2).mean().backward();
  }
  state.counters["tokens/s"] = benchmark::Counter(8 * 128 * state.iterations(),
                                                  benchmark::Counter::kIsRate);
  state.SetLabel(state.range(2) ? "sparse decode" : "dense decode");
}
BENCHMARK(BM_Lorsa)
    ->ArgsProduct({{128}, {16}, {0, 1}})
    ->ArgsProduct({{256}, {64}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

BENCHMARK(BM_MohdFfn)
    ->ArgsProduct({{256}, {8}, {0, 1}})
    ->ArgsProduct({{1024}, {16}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_MohdAttention)
    ->ArgsProduct({{256}, {8}, {0, 1}})
    ->ArgsProduct({{1024}, {16}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace sparse_layers::layers

BENCHMARK_MAIN();
