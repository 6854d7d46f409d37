#include "layers/ffn/sgatlin.h"

#include <torch/torch.h>

#include "gtest/gtest.h"
#include "ops/core/parameter_count.h"
#include "ops/testing/gradient_check.h"

namespace sparse_layers::layers {
namespace {

ProductKeyOptions Tiny() {
  ProductKeyOptions options;
  options.d_model = 8;
  options.d_ffn = 25;  // n = 5.
  options.channels = 3;
  options.top_k = 2;
  options.d_key = 6;
  return options;
}

// y = sum_c sum_i g_ci w_out_ci (w_in_ci . z) from the brute-force top-k.
torch::Tensor Reference(ProductKeyFfnImpl& layer, const torch::Tensor& z) {
  const auto& o = layer.options();
  const torch::Tensor s =
      torch::matmul(torch::matmul(z, layer.query.t()), layer.keys.t())
          .view({z.size(0), 2, o.channels, 5});
  torch::Tensor y = torch::zeros_like(z);
  for (int64_t t = 0; t < z.size(0); ++t) {
    for (int64_t c = 0; c < o.channels; ++c) {
      const torch::Tensor all =
          (s[t][0][c].unsqueeze(-1) + s[t][1][c].unsqueeze(0)).reshape({-1});
      const auto [g, idx] = all.topk(o.top_k);
      for (int64_t j = 0; j < o.top_k; ++j) {
        const int64_t row = c * o.d_ffn + idx[j].item<int64_t>();
        y[t] += g[j] * layer.experts_out[row] *
                torch::dot(layer.experts_in[row], z[t]);
      }
    }
  }
  return y;
}

TEST(SgatlinTest, ForwardEqualsTheBruteForceGatedSumAndIsLinearGivenGates) {
  torch::manual_seed(1);
  ProductKeyFfnImpl layer(Tiny());
  const torch::Tensor z = torch::randn({4, 8});
  HookPoint none;
  torch::NoGradGuard no_grad;
  EXPECT_TRUE(
      torch::allclose(layer.Forward(z, none), Reference(layer, z), 1e-4, 1e-5));
  // Gates are raw scores: no softmax, no normalisation.
  const ProductTopK routing = layer.Route(z);
  EXPECT_FALSE(torch::allclose(routing.scores.sum(-1), torch::ones({4, 3})));
}

// The batched router products against the two einsums of the paper's code,
// values and gradients.
TEST(SgatlinTest, PeerRouterScoresEqualTheEinsums) {
  torch::manual_seed(7);
  const torch::Tensor z = torch::randn({33, 8}, torch::requires_grad());
  const torch::Tensor query =
      torch::randn({2, 3, 8, 6}, torch::requires_grad());
  const torch::Tensor keys = torch::randn({2, 3, 5, 6}, torch::requires_grad());
  const torch::Tensor upstream = torch::randn({33, 2, 3, 5});
  const torch::Tensor fused = PeerRouterScores(z, query, keys);
  const torch::Tensor reference = PeerRouterScoresReference(z, query, keys);
  EXPECT_TRUE(torch::allclose(fused, reference, 1e-5, 1e-6));
  const auto fused_grads =
      torch::autograd::grad({fused}, {z, query, keys}, {upstream});
  const auto reference_grads =
      torch::autograd::grad({reference}, {z, query, keys}, {upstream});
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(torch::allclose(fused_grads[i], reference_grads[i], 1e-4, 1e-5))
        << i << ": "
        << (fused_grads[i] - reference_grads[i]).abs().max().item<float>();
  }
}

TEST(SgatlinTest, EveryParameterReceivesGradient) {
  torch::manual_seed(2);
  for (bool peer : {false, true}) {
    ProductKeyOptions options = Tiny();
    if (peer) {
      options.router = ProductKeyOptions::Router::kProductKeyValue;
      options.activation = ProductKeyOptions::Activation::kGelu;
      options.peer = true;
    }
    ProductKeyFfnImpl layer(options);
    HookPoint none;
    layer.Forward(torch::randn({16, 8}), none).pow(2).sum().backward();
    for (const auto& item : layer.named_parameters()) {
      EXPECT_GT(item.value().grad().abs().sum().item<double>(), 0)
          << item.key();
    }
  }
}

// The sgatlin code's parameter and FLOP formulas (flops.py) at Listing 2's
// scale 2 (arXiv:2606.07414 App. B.2; D = 256, C = 16, k = 8, d_key = 128).
TEST(SgatlinTest, ParameterAndFlopCountsMatchTheLadderTables) {
  ProductKeyOptions options;
  options.d_model = 256;
  options.d_ffn = 1600;
  options.channels = 16;
  options.top_k = 8;
  options.d_key = 128;
  ProductKeyFfnImpl sgatlin(options);
  EXPECT_EQ(CountParameters(sgatlin), 13303808);
  // Same FFN FLOPs as the scale-2 MLP, 2 * 2 * 256 * 512 (Table 4.7 rows
  // equal).
  EXPECT_EQ(sgatlin.ForwardFlopsPerToken(), 524288);

  options.d_ffn = 6400;  // PEER's shared pool, (32 + 24 * 2)^2.
  options.router = ProductKeyOptions::Router::kProductKeyValue;
  options.peer = true;
  ProductKeyFfnImpl peer(options);
  EXPECT_EQ(CountParameters(peer),
            2 * 16 * 80 * 128 + 2 * 16 * 256 * 128 + 2 * 6400 * 256);
  // 4 layers x (attention 2,621,440 + PEER) = 2.2020e7 per token at T = 2048.
  EXPECT_EQ(4 * (2621440 + peer.ForwardFlopsPerToken()), 22020096);
}

TEST(SgatlinTest, AblationActivationsApplyAfterTheGate) {
  torch::manual_seed(3);
  ProductKeyOptions options = Tiny();
  options.activation = ProductKeyOptions::Activation::kRelu;
  ProductKeyFfnImpl relu(options);
  ProductKeyFfnImpl identity(Tiny());
  {
    torch::NoGradGuard no_grad;
    identity.query.copy_(relu.query);
    identity.keys.copy_(relu.keys);
    identity.experts_in.copy_(relu.experts_in);
    identity.experts_out.copy_(relu.experts_out);
  }
  const torch::Tensor z = torch::randn({5, 8});
  std::vector<torch::Tensor> gated, activated;
  HookPoint capture_identity("h"), capture_relu("h");
  capture_identity.Add(CaptureHook(&gated));
  capture_relu.Add(CaptureHook(&activated));
  identity.Forward(z, capture_identity);
  relu.Forward(z, capture_relu);
  EXPECT_TRUE(torch::allclose(activated[0], torch::relu(gated[0])));
}

TEST(SgatlinTest, GradientsMatchFiniteDifferences) {
  for (bool peer : {false, true}) {
    torch::manual_seed(6);
    ProductKeyOptions options = Tiny();
    if (peer) {
      options.router = ProductKeyOptions::Router::kProductKeyValue;
      options.peer = true;
    }
    ProductKeyFfnImpl layer(options);
    layer.to(torch::kDouble);
    const torch::Tensor z = torch::randn({3, 8}, torch::kDouble);
    HookPoint none;
    std::vector<std::pair<std::string, torch::Tensor>> named;
    for (const auto& item : layer.named_parameters())
      named.emplace_back(item.key(), item.value());
    const auto mismatches = testing::CheckGradients(
        [&] { return layer.Forward(z, none).pow(2).sum(); }, named);
    EXPECT_TRUE(mismatches.empty())
        << (peer ? "peer: " : "sgatlin: ") << mismatches.front();
  }
}

TEST(SgatlinTest, PatchingARoutingWithItselfChangesNothingAndOtherwiseDoes) {
  torch::manual_seed(5);
  ProductKeyOptions options = Tiny();
  options.hook_prefix = "blocks.3.ffn.";
  ProductKeyFfnImpl layer(options);
  ASSERT_EQ(layer.HookPoints().size(), 2u);
  EXPECT_EQ(layer.HookPoints()[0]->name(), "blocks.3.ffn.hook_router_scores");
  EXPECT_EQ(layer.HookPoints()[1]->name(), "blocks.3.ffn.hook_router_indices");
  const torch::Tensor source = torch::randn({4, 8});
  const torch::Tensor target = torch::randn({4, 8});
  HookPoint none;
  torch::NoGradGuard no_grad;
  // Runs `input` with `scores` / `indices` hooks (none: unhooked) and returns
  // the output; the routing it saw lands in `seen`.
  auto run = [&](const torch::Tensor& input, HookFn scores, HookFn indices,
                 ProductTopK* seen) {
    std::vector<torch::Tensor> s, i;
    layer.hook_router_scores.Add(CaptureHook(&s));
    layer.hook_router_indices.Add(CaptureHook(&i));
    if (scores) layer.hook_router_scores.Add(scores);
    if (indices) layer.hook_router_indices.Add(indices);
    const torch::Tensor out = layer.Forward(input, none);
    layer.hook_router_scores.Clear();
    layer.hook_router_indices.Clear();
    if (seen != nullptr) *seen = {s.at(0), i.at(0)};
    return out;
  };
  ProductTopK clean_routing, other;
  const torch::Tensor clean = run(target, nullptr, nullptr, &clean_routing);
  EXPECT_TRUE(torch::equal(layer.Forward(target, none), clean));
  // Own routing patched back in: identical output.
  EXPECT_TRUE(torch::equal(run(target, ReplaceHook([&](const torch::Tensor&) {
                                 return clean_routing.scores;
                               }),
                               ReplaceHook([&](const torch::Tensor&) {
                                 return clean_routing.indices;
                               }),
                               nullptr),
                           clean));
  // Another prompt's routing at position 2 only: that position changes.
  run(source, nullptr, nullptr, &other);
  auto at_two = [](const torch::Tensor& from) {
    return ReplaceHook([from](const torch::Tensor& routing) {
      torch::Tensor out = routing.clone();
      out[2] = from[2];
      return out;
    });
  };
  const torch::Tensor patched =
      run(target, at_two(other.scores), at_two(other.indices), nullptr);
  EXPECT_TRUE(torch::equal(patched[0], clean[0]));
  EXPECT_FALSE(torch::allclose(patched[2], clean[2]));
}

}  // namespace
}  // namespace sparse_layers::layers
