#include "layers/mohd/mohd.h"

#include <torch/torch.h>

#include "gtest/gtest.h"
#include "layers/core/causal_attention.h"
#include "layers/testing/gradient_check.h"

namespace sparse_layers::layers {
namespace {

double Millions(int64_t count) { return count / 1e6; }

// seed-mohd.md 2: every count of Tables 1, 2 and 5 (V = 32000, 24 layers).
TEST(MohdParametersTest, ReproduceThePapersCounts) {
  EXPECT_NEAR(
      Millions(MohdActivatedParameters(24, 1024, 1024, 1024, 1024, 2560)),
      289.4, 0.05);
  EXPECT_NEAR(Millions(MohdTotalParameters(24, 1024, 1024, 1024, 2560, 32000)),
              354.9, 0.05);
  EXPECT_NEAR(Millions(MohdActivatedParameters(24, 512, 512, 1024, 1024, 2560)),
              144.7, 0.05);
  EXPECT_NEAR(Millions(MohdActivatedParameters(24, 768, 768, 1024, 1024, 2560)),
              217.1, 0.05);
  EXPECT_NEAR(Millions(MohdTotalParameters(24, 2048, 1024, 1024, 2560, 32000)),
              709.9, 0.05);
  EXPECT_NEAR(Millions(MohdTotalParameters(24, 4096, 1024, 1024, 2560, 32000)),
              1419.8, 0.05);
  // 495M: head_dim 32, q = 1024, kv = 512.
  EXPECT_NEAR(
      Millions(MohdActivatedParameters(24, 1536, 1536, 1024, 512, 2560)), 396.4,
      0.05);
  EXPECT_NEAR(Millions(MohdTotalParameters(24, 1536, 1024, 512, 2560, 32000)),
              494.7, 0.05);
  EXPECT_NEAR(
      Millions(MohdActivatedParameters(24, 2048, 2048, 2048, 2048, 4096)),
      1006.6, 0.05);
  EXPECT_NEAR(Millions(MohdTotalParameters(24, 8192, 2048, 2048, 4096, 32000)),
              4550.8, 0.05);
  // Table 5: attention and FFN sparsified independently (whole millions,
  // truncated as the table prints them).
  EXPECT_EQ(MohdActivatedParameters(24, 1024, 512, 1024, 1024, 2560) / 1000000,
            195);
  EXPECT_EQ(MohdActivatedParameters(24, 512, 1024, 1024, 1024, 2560) / 1000000,
            239);
  EXPECT_EQ(MohdActivatedParameters(24, 1024, 256, 1024, 1024, 2560) / 1000000,
            147);
  EXPECT_EQ(MohdActivatedParameters(24, 256, 1024, 1024, 1024, 2560) / 1000000,
            213);
  EXPECT_EQ(MohdActivatedParameters(24, 256, 256, 1024, 1024, 2560) / 1000000,
            72);
}

MohdOptions Options(int64_t active, int64_t shared) {
  MohdOptions options;
  options.d_model = 16;
  options.sub_dims = 4;
  options.active = active;
  options.shared = shared;
  return options;
}

TEST(MohdFfnTest, AllSubDimsActiveWithAZeroRouterIsTheDenseSwiGlu) {
  torch::manual_seed(0);
  MohdFfnImpl ffn(Options(4, 0), 24, 1);
  {
    torch::NoGradGuard no_grad;
    ffn.gate->router.zero_();
  }
  const torch::Tensor x = torch::randn({5, 16});
  HookPoint none;
  const torch::Tensor dense = torch::matmul(
      torch::silu(torch::matmul(x, ffn.w_gate)) * torch::matmul(x, ffn.w_up),
      ffn.w_down);
  EXPECT_TRUE(torch::allclose(ffn.Forward(x, none), dense, 1e-5, 1e-6));
}

TEST(MohdAttentionTest, AllSubDimsActiveWithAZeroRouterIsDenseAttention) {
  torch::manual_seed(1);
  MohdAttention mohd(Options(4, 0), 16, 4, 12, 1);
  {
    torch::NoGradGuard no_grad;
    mohd->gate->router.zero_();
  }
  CausalAttentionOptions options;
  options.d_model = 16;
  options.n_heads = 4;
  options.context_length = 12;
  options.rotary = true;
  CausalSelfAttention dense(options, "");
  {
    torch::NoGradGuard no_grad;
    dense->qkv->weight.copy_(
        torch::cat({mohd->w_q.t(), mohd->w_k.t(), mohd->w_v.t()}));
    dense->out->weight.copy_(mohd->w_o.t());
  }
  const torch::Tensor x = torch::randn({2, 7, 16});
  EXPECT_TRUE(torch::allclose(mohd->forward(x), dense->forward(x), 1e-5, 1e-6));
}

TEST(MohdRoutingTest, KActiveWithTheSharedAlwaysInAndRenormalisedWeights) {
  torch::manual_seed(2);
  MohdGate gate(Options(3, 2));
  const MohdRouting routing = gate->Route(torch::randn({30, 16}));
  EXPECT_TRUE(torch::all(routing.mask.sum(-1) == 3).item<bool>());
  EXPECT_TRUE(torch::all(routing.mask.slice(1, 0, 2) == 1).item<bool>());
  // renorm: the active weights sum to K.
  EXPECT_TRUE(torch::allclose(routing.weights.sum(-1), torch::full({30}, 3.0)));
  EXPECT_TRUE(
      torch::all((routing.weights > 0) == (routing.mask > 0)).item<bool>());
}

TEST(MohdRoutingTest, InactiveRowsAndColumnsGetNoGradient) {
  torch::manual_seed(3);
  MohdFfnImpl ffn(Options(2, 1), 24, 1);
  const torch::Tensor x = torch::randn({1, 16});
  HookPoint none;
  ffn.Forward(x, none).sum().backward();
  const torch::Tensor active =
      ffn.gate->Expand(ffn.gate->Route(x).mask)[0].to(torch::kBool);
  EXPECT_EQ(ffn.w_gate.grad()
                .index({active.logical_not()})
                .abs()
                .sum()
                .item<double>(),
            0);
  EXPECT_EQ(ffn.w_down.grad()
                .index({torch::indexing::Slice(), active.logical_not()})
                .abs()
                .sum()
                .item<double>(),
            0);
  EXPECT_GT(ffn.w_gate.grad().index({active}).abs().sum().item<double>(), 0);
}

TEST(MohdRoutingTest, BalanceLossIsBetaWhenUniformAndMoreWhenCollapsed) {
  MohdGate gate(Options(2, 1));
  gate->train();
  {
    torch::NoGradGuard no_grad;
    gate->router.zero_();
  }
  const torch::Tensor x = torch::randn({40, 16});
  EXPECT_NEAR(gate->Route(x).balance.item<double>(), 0.01, 1e-7);
  // Positive inputs and a router column for sub-dim 3 only: f and P
  // concentrate on it.
  const torch::Tensor positive = torch::rand({40, 16}) + 0.5;
  {
    torch::NoGradGuard no_grad;
    gate->router.select(1, 3).fill_(1.0);
  }
  EXPECT_GT(gate->Route(positive).balance.item<double>(), 0.015);
}

TEST(MohdFfnTest, GatherSparseEqualsMaskedDenseInOutputsAndGradients) {
  torch::manual_seed(7);
  MohdOptions options = Options(3, 1);
  options.d_model = 32;
  options.sub_dims = 8;
  MohdFfnImpl ffn(options, 24, 1);
  {
    torch::NoGradGuard no_grad;
    ffn.gate->fusion.add_(torch::randn({8, 8}) * 0.1);  // A non-trivial fusion.
  }
  const torch::Tensor x = torch::randn({20, 32});
  HookPoint none;
  const torch::Tensor dense = ffn.Forward(x, none);
  dense.pow(2).sum().backward();
  std::vector<torch::Tensor> dense_grads;
  for (const auto& p : ffn.parameters())
    dense_grads.push_back(p.grad().clone());
  ffn.zero_grad();
  ffn.gather_sparse = true;
  const torch::Tensor sparse = ffn.Forward(x, none);
  EXPECT_TRUE(torch::allclose(sparse, dense, 1e-5, 1e-6));
  sparse.pow(2).sum().backward();
  size_t i = 0;
  for (const auto& p : ffn.parameters()) {
    EXPECT_TRUE(torch::allclose(p.grad(), dense_grads[i++], 1e-4, 1e-6));
  }
}

TEST(MohdAttentionTest, GatherSparseEqualsMaskedDenseInOutputsAndGradients) {
  torch::manual_seed(8);
  MohdOptions options = Options(3, 1);
  options.d_model = 32;
  options.sub_dims = 8;
  MohdAttention attention(options, 16, 2, 10, 1);
  {
    torch::NoGradGuard no_grad;
    attention->gate->fusion.add_(torch::randn({8, 8}) * 0.1);
  }
  const torch::Tensor x = torch::randn({2, 10, 32});
  const torch::Tensor dense = attention->forward(x);
  dense.pow(2).sum().backward();
  std::vector<torch::Tensor> dense_grads;
  for (const auto& p : attention->parameters())
    dense_grads.push_back(p.grad().clone());
  attention->zero_grad();
  attention->gather_sparse = true;
  const torch::Tensor sparse = attention->forward(x);
  EXPECT_TRUE(torch::allclose(sparse, dense, 1e-5, 1e-6));
  sparse.pow(2).sum().backward();
  size_t i = 0;
  for (const auto& p : attention->parameters()) {
    EXPECT_TRUE(torch::allclose(p.grad(), dense_grads[i++], 1e-4, 1e-6));
  }
}

TEST(MohdOptionsTest, VariantsSelectTheAblations) {
  LayerVariants variants;
  MohdOptions options = MohdOptionsFor(64, 8, 3, variants);
  EXPECT_EQ(options.shared, 2);  // K - 1 by default.
  EXPECT_EQ(options.alpha, MohdOptions::Alpha::kRenorm);
  EXPECT_TRUE(options.fusion);
  variants.mohd_shared = 0;
  variants.mohd_scaling = "none";
  variants.mohd_fusion = false;
  variants.mohd_random_routing = true;
  variants.mohd_balance_weight = 0.5;
  options = MohdOptionsFor(64, 8, 3, variants);
  EXPECT_EQ(options.shared, 0);
  EXPECT_EQ(options.alpha, MohdOptions::Alpha::kNone);
  EXPECT_FALSE(options.fusion);
  EXPECT_TRUE(options.random_routing);
  EXPECT_EQ(options.balance_weight, 0.5);
  EXPECT_EQ(*MohdScalingFromName("literal"), MohdOptions::Alpha::kLiteral);
  EXPECT_FALSE(MohdScalingFromName("sqrt").ok());
}

TEST(MohdFusionTest, IdentityFusionEqualsNoFusion) {
  torch::manual_seed(4);
  MohdOptions with = Options(2, 1);
  MohdOptions without = with;
  without.fusion = false;
  MohdFfnImpl a(with, 24, 1);
  MohdFfnImpl b(without, 24, 1);
  {
    torch::NoGradGuard no_grad;
    for (const auto& item : a.named_parameters()) {
      b.named_parameters()[item.key()].copy_(item.value());
    }
  }
  const torch::Tensor x = torch::randn({6, 16});
  HookPoint none;
  EXPECT_TRUE(torch::allclose(a.Forward(x, none), b.Forward(x, none)));
}

TEST(MohdGradientTest, FfnAndAttentionMatchFiniteDifferences) {
  torch::manual_seed(6);
  MohdFfnImpl ffn(Options(2, 1), 24, 1);
  ffn.to(torch::kDouble);
  ffn.train();
  const torch::Tensor x = torch::randn({3, 16}, torch::kDouble);
  HookPoint none;
  std::vector<std::pair<std::string, torch::Tensor>> named;
  for (const auto& item : ffn.named_parameters())
    named.emplace_back(item.key(), item.value());
  // Output plus the balance loss, so the router's gradient is checked too.
  auto mismatches = testing::CheckGradients(
      [&] {
        const torch::Tensor output = ffn.Forward(x, none).pow(2).sum();
        return output + ffn.AuxiliaryLoss();  // Set by the forward above.
      },
      named);
  EXPECT_TRUE(mismatches.empty()) << mismatches.front();

  MohdAttention attention(Options(3, 1), 8, 2, 6, 1);
  attention->to(torch::kDouble);
  const torch::Tensor sequence = torch::randn({1, 4, 16}, torch::kDouble);
  named.clear();
  for (const auto& item : attention->named_parameters())
    named.emplace_back(item.key(), item.value());
  mismatches = testing::CheckGradients(
      [&] { return attention->forward(sequence).pow(2).sum(); }, named);
  EXPECT_TRUE(mismatches.empty()) << mismatches.front();
}

}  // namespace
}  // namespace sparse_layers::layers
