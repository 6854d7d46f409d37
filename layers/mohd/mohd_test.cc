#include "layers/mohd/mohd.h"

#include <torch/torch.h>

#include <cmath>
#include <vector>

#include "gtest/gtest.h"
#include "layers/attention/causal_attention.h"
#include "ops/core/rotary.h"
#include "ops/testing/gradient_check.h"

namespace sparse_layers::layers {
namespace {

double Millions(int64_t count) { return count / 1e6; }

// Every count of MoHD (arXiv:2412.05644) Tables 1, 2 and 5 (V = 32000, 24
// layers).
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
  options.top_k = active;
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
  AttentionOptions options;
  options.d_model = 16;
  options.n_heads = 4;
  options.context_length = 12;
  options.rotary = true;
  CausalSelfAttention dense(options);
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

TEST(MohdOptionsTest, VariantsSelectTheAblations) {
  LayerVariants variants;
  MohdOptions options = MohdOptionsFor(64, 8, 3, variants);
  EXPECT_EQ(options.shared, 2);  // K - 1 by default.
  EXPECT_EQ(options.scaling, config::LayerOptions::RENORM);
  EXPECT_TRUE(options.fusion);
  variants.mohd_shared = 0;
  variants.mohd_scaling = config::LayerOptions::NONE;
  variants.mohd_fusion = false;
  variants.mohd_random_routing = true;
  variants.mohd_balance_weight = 0.5;
  options = MohdOptionsFor(64, 8, 3, variants);
  EXPECT_EQ(options.shared, 0);
  EXPECT_EQ(options.scaling, config::LayerOptions::NONE);
  EXPECT_FALSE(options.fusion);
  EXPECT_TRUE(options.random_routing);
  EXPECT_EQ(options.balance_weight, 0.5);
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

// Independent references for MoHD (arXiv:2412.05644 Secs. 4.1-4.5, Eqs. 9
// and 14-16), written with plain torch ops and loops, sharing no code with
// mohd.cc beyond the parameter tensors.

// Per-dimension weights w_D (T, D): s = softmax(x Phi) over all N sub-dims;
// the S shared sub-dims plus the (K - S) largest s of the others are active;
// alpha = K / sum_A s (RENORM); each weight covers its d_e dimensions.
torch::Tensor ReferenceWeights(const MohdOptions& o, const torch::Tensor& x,
                               const torch::Tensor& router) {
  const torch::Tensor s = torch::softmax(torch::matmul(x, router), -1);
  const torch::Tensor values = s.detach().to(torch::kDouble).contiguous();
  const auto a = values.accessor<double, 2>();
  torch::Tensor mask = torch::zeros({x.size(0), o.sub_dims}, x.options());
  for (int64_t t = 0; t < x.size(0); ++t) {
    for (int64_t j = 0; j < o.sub_dims; ++j) {
      int64_t larger = 0;  // Routed sub-dims with a larger score than j.
      for (int64_t i = o.shared; i < o.sub_dims; ++i)
        larger += a[t][i] > a[t][j];
      if (j < o.shared || larger < o.top_k - o.shared) mask[t][j] = 1.0;
    }
  }
  const torch::Tensor g = s * mask;
  const torch::Tensor w = g * (double(o.top_k) / g.sum(-1, true));
  return torch::kron(w, torch::ones({1, o.d_model / o.sub_dims}, x.options()));
}

// Eq. 9 (Sec. 4.2) with receptive field r = d_e: F = m (x) I_{d_e}, out = F y
// per token.
torch::Tensor ReferenceFuse(const torch::Tensor& m, const torch::Tensor& y,
                            int64_t d_e) {
  return torch::matmul(y, torch::kron(m, torch::eye(d_e, y.options())).t());
}

// Eq. 16 (Sec. 4.5): SwiGLU on x * w_D, output columns weighted by w_D, fused.
torch::Tensor ReferenceFfn(const MohdOptions& o, MohdFfnImpl& ffn,
                           const torch::Tensor& x) {
  const torch::Tensor w = ReferenceWeights(o, x, ffn.gate->router);
  const torch::Tensor scaled = x * w;
  const torch::Tensor h = torch::silu(torch::matmul(scaled, ffn.w_gate)) *
                          torch::matmul(scaled, ffn.w_up);
  return ReferenceFuse(ffn.gate->fusion, torch::matmul(h, ffn.w_down) * w,
                       o.d_model / o.sub_dims);
}

// Eqs. 14-15 (Sec. 4.5): rotary causal attention on x * w_D, output weighted
// and fused.
torch::Tensor ReferenceAttention(const MohdOptions& o, MohdAttention& attention,
                                 int64_t heads, const torch::Tensor& x) {
  const int64_t batch = x.size(0), length = x.size(1);
  const torch::Tensor flat = x.reshape({-1, o.d_model});
  const torch::Tensor w = ReferenceWeights(o, flat, attention->gate->router);
  const torch::Tensor scaled = flat * w;
  const int64_t head_dim = attention->w_q.size(1) / heads;
  const RotaryEmbedding rotary(head_dim, length);
  auto split = [&](const torch::Tensor& t) {
    return t.view({batch, length, heads, head_dim}).transpose(1, 2);
  };
  const torch::Tensor q =
      rotary.Apply(split(torch::matmul(scaled, attention->w_q)));
  const torch::Tensor k =
      rotary.Apply(split(torch::matmul(scaled, attention->w_k)));
  const torch::Tensor v = split(torch::matmul(scaled, attention->w_v));
  const torch::Tensor future =
      torch::ones({length, length}, torch::kBool).triu(1);
  const torch::Tensor pattern =
      (torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(double(head_dim)))
          .masked_fill(future, -INFINITY)
          .softmax(-1);
  const torch::Tensor mixed =
      torch::matmul(pattern, v).transpose(1, 2).reshape({batch * length, -1});
  return ReferenceFuse(attention->gate->fusion,
                       torch::matmul(mixed, attention->w_o) * w,
                       o.d_model / o.sub_dims)
      .view(x.sizes());
}

// max |actual - expected| relative to max |expected| (both must be defined).
double RelativeError(const torch::Tensor& actual,
                     const torch::Tensor& expected) {
  return ((actual - expected).abs().max() / expected.abs().max())
      .item<double>();
}

// A random, far-from-identity fusion m and a router that spreads the choices.
void Randomize(MohdGate& gate) {
  torch::NoGradGuard no_grad;
  gate->fusion.normal_();
  gate->router.normal_(0.0, 0.3);
}

MohdOptions WideOptions() {
  MohdOptions options = Options(3, 1);
  options.d_model = 32;
  options.sub_dims = 8;
  return options;
}

TEST(MohdFusionTest, FuseIsTheKroneckerGroupFusionOfEq9) {
  torch::manual_seed(5);
  MohdGate gate(WideOptions());
  Randomize(gate);
  torch::Tensor y = torch::randn({6, 32});
  y.slice(1, 8, 32).zero_();  // Sub-dims 2..7 inactive: fusion fills them.
  const torch::Tensor fused = gate->Fuse(y);
  EXPECT_LT(RelativeError(fused, ReferenceFuse(gate->fusion, y, 4)), 1e-5);
  EXPECT_GT(fused.slice(1, 8, 32).abs().min().item<double>(), 0);
}

class MohdReferenceTest : public ::testing::TestWithParam<bool> {};

// Outputs and gradients of every parameter (router and fusion m included),
// masked-dense and gather-sparse alike, equal the explicit reference.
TEST_P(MohdReferenceTest, FfnEqualsTheExplicitReference) {
  torch::manual_seed(7);
  const MohdOptions options = WideOptions();
  MohdFfnImpl ffn(options, 24, 1);
  ffn.to(torch::kDouble);
  ffn.gather_sparse = GetParam();
  Randomize(ffn.gate);
  const torch::Tensor x = torch::randn({20, 32}, torch::kDouble);
  const torch::Tensor target = torch::randn({20, 32}, torch::kDouble);
  const torch::Tensor expected = ReferenceFfn(options, ffn, x);
  const std::vector<torch::Tensor> parameters = ffn.parameters();
  const auto expected_grads =
      torch::autograd::grad({(expected * target).sum()}, parameters);
  HookPoint none;
  const torch::Tensor output = ffn.Forward(x, none);
  EXPECT_LT(RelativeError(output, expected), 1e-10);
  (output * target).sum().backward();
  const auto names = ffn.named_parameters().keys();
  for (size_t i = 0; i < parameters.size(); ++i) {
    ASSERT_TRUE(parameters[i].grad().defined()) << names[i];
    EXPECT_LT(RelativeError(parameters[i].grad(), expected_grads[i]), 1e-10)
        << names[i];
  }
}

TEST_P(MohdReferenceTest, AttentionEqualsTheExplicitReference) {
  torch::manual_seed(8);
  const MohdOptions options = WideOptions();
  MohdAttention attention(options, 16, 2, 10, 1);
  attention->to(torch::kDouble);
  attention->gather_sparse = GetParam();
  Randomize(attention->gate);
  const torch::Tensor x = torch::randn({2, 10, 32}, torch::kDouble);
  const torch::Tensor target = torch::randn({2, 10, 32}, torch::kDouble);
  const torch::Tensor expected = ReferenceAttention(options, attention, 2, x);
  const std::vector<torch::Tensor> parameters = attention->parameters();
  const auto expected_grads =
      torch::autograd::grad({(expected * target).sum()}, parameters);
  const torch::Tensor output = attention->forward(x);
  EXPECT_LT(RelativeError(output, expected), 1e-10);
  (output * target).sum().backward();
  const auto names = attention->named_parameters().keys();
  for (size_t i = 0; i < parameters.size(); ++i) {
    ASSERT_TRUE(parameters[i].grad().defined()) << names[i];
    EXPECT_LT(RelativeError(parameters[i].grad(), expected_grads[i]), 1e-10)
        << names[i];
  }
}

INSTANTIATE_TEST_SUITE_P(MaskedDenseAndGatherSparse, MohdReferenceTest,
                         ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "GatherSparse" : "MaskedDense";
                         });

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
