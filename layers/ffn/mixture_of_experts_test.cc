#include "layers/ffn/mixture_of_experts.h"

#include <torch/torch.h>

#include <cmath>
#include <vector>

#include "gtest/gtest.h"
#include "ops/core/parameter_count.h"
#include "ops/testing/gradient_check.h"

namespace sparse_layers::layers {
namespace {

MixtureOptions Options(Activation activation, MixtureOptions::Router router) {
  MixtureOptions options;
  options.d_model = 12;
  options.d_ffn = 20;
  options.n_experts = 8;
  options.top_k = 2;
  options.activation = activation;
  options.router = router;
  return options;
}

class MixtureVariantsTest : public ::testing::TestWithParam<
                                std::pair<Activation, MixtureOptions::Router>> {
};

TEST_P(MixtureVariantsTest, DroplessDispatchEqualsDenseAndWideSparseMlp) {
  torch::manual_seed(0);
  MixtureOfExpertsImpl moe(Options(GetParam().first, GetParam().second));
  const torch::Tensor x = torch::randn({2, 9, 12});
  HookPoint none;
  const torch::Tensor sparse = moe.Forward(x, none);
  const torch::Tensor flat = x.view({-1, 12});
  // Every expert computed densely and masked.
  EXPECT_TRUE(torch::allclose(sparse.view({-1, 12}), moe.ForwardDense(flat),
                              1e-5, 1e-6));
  // The wide-MLP rewrite: z (N, M*D) is block-sparse with k active blocks.
  const torch::Tensor z = moe.WideCode(flat);
  EXPECT_EQ(z.size(1), 8 * 20);
  const torch::Tensor active_blocks = z.view({-1, 8, 20}).ne(0).any(-1).sum(-1);
  EXPECT_TRUE((active_blocks <= 2).all().item<bool>());
  EXPECT_TRUE(torch::allclose(sparse.view({-1, 12}),
                              torch::matmul(z, moe.WideDecoder()), 1e-5, 1e-6));
  // Gates are a softmax over the k kept scores.
  const Routing routing = moe.Route(flat);
  EXPECT_TRUE(torch::allclose(routing.weights.sum(-1), torch::ones({18})));
}

INSTANTIATE_TEST_SUITE_P(
    Variants, MixtureVariantsTest,
    ::testing::Values(
        std::make_pair(Activation::kGelu, MixtureOptions::Router::kLearned),
        std::make_pair(Activation::kRelu,
                       MixtureOptions::Router::kSparsityAware),
        std::make_pair(Activation::kGelu,
                       MixtureOptions::Router::kSparsityAware),
        std::make_pair(Activation::kRelu, MixtureOptions::Router::kLearned)));

double Correlation(const torch::Tensor& a, const torch::Tensor& b) {
  const torch::Tensor x =
      a.flatten().to(torch::kDouble) - a.to(torch::kDouble).mean();
  const torch::Tensor y =
      b.flatten().to(torch::kDouble) - b.to(torch::kDouble).mean();
  return (x * y).sum().item<double>() / (x.norm() * y.norm()).item<double>();
}

TEST(SparsityRouterTest, ScoresOrderExpertsByTheirTrueSparsity) {
  torch::manual_seed(1);
  MixtureOptions options =
      Options(Activation::kRelu, MixtureOptions::Router::kSparsityAware);
  options.d_model = 64;
  options.d_ffn = 256;
  MixtureOfExpertsImpl moe(options);
  {
    // Experts whose weight columns have different means: different sparsity.
    torch::NoGradGuard no_grad;
    for (int j = 0; j < 8; ++j) {
      moe.encoders[j].copy_(torch::randn({256, 64}) * (0.5 + 0.1 * j) +
                            torch::randn({1, 64}) * 0.3);
    }
  }
  const torch::Tensor x = torch::randn({200, 64});
  const Routing routing = moe.Route(x);
  // True fraction of active units of every expert for every token.
  const torch::Tensor active =
      moe.AllPreActivations(x).gt(0).to(torch::kFloat).mean(-1);
  // s_j = 1 - 2 Phi(mu/sigma) estimates 1 - 2 * active fraction
  // (MoE-X, arXiv:2503.07639 Sec. 4.3.2, Eqs. 6-7).
  const double r = Correlation(routing.scores, 1 - 2 * active);
  std::printf("router score vs true sparsity: Pearson r = %.4f\n", r);
  EXPECT_GT(r, 0.95);
  // The literal-as-printed variance version is worse.
  options.router_sigma_is_variance = true;
  MixtureOfExpertsImpl literal(options);
  {
    torch::NoGradGuard no_grad;
    literal.encoders.copy_(moe.encoders);
  }
  const double r_literal = Correlation(literal.Route(x).scores, 1 - 2 * active);
  std::printf("with sigma read as a variance: r = %.4f\n", r_literal);
  EXPECT_LT(r_literal, r);
}

// The Switch load-balance loss of MoE-X App. F Eq. 19,
// alpha * N * sum_i f_i P_i with N experts, written out token by token in
// double from the router scores: f_i counts top-1 choices, P_i averages the
// softmax over all N experts.
double SwitchBalanceLoss(const torch::Tensor& scores, double lambda) {
  const torch::Tensor s = scores.detach().to(torch::kDouble).contiguous();
  const int64_t tokens = s.size(0), n = s.size(1);
  const auto a = s.accessor<double, 2>();
  std::vector<double> f(n, 0.0), p(n, 0.0);
  for (int64_t t = 0; t < tokens; ++t) {
    double total = 0;
    int64_t top = 0;
    for (int64_t i = 0; i < n; ++i) {
      total += std::exp(a[t][i]);
      if (a[t][i] > a[t][top]) top = i;
    }
    for (int64_t i = 0; i < n; ++i) p[i] += std::exp(a[t][i]) / total / tokens;
    f[top] += 1.0 / tokens;
  }
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += f[i] * p[i];
  return lambda * n * sum;
}

// Runs one training forward and returns the layer's load-balance loss.
double LayerBalanceLoss(MixtureOfExpertsImpl& moe, const torch::Tensor& x) {
  moe.train();
  HookPoint none;
  moe.Forward(x, none);
  return moe.AuxiliaryLoss().item<double>();
}

TEST(LoadBalanceTest, PerfectlyBalancedRoutingGivesLambda) {
  MixtureOfExpertsImpl moe(
      Options(Activation::kGelu, MixtureOptions::Router::kLearned));
  // Token t is the basis vector e_{t mod 8} and router row i is 2 e_i: every
  // expert is the top-1 choice of 2 of the 16 tokens (f_i = 1/8) and, by
  // symmetry, P_i = 1/8, so lambda * 8 * 8 * (1/8)(1/8) = lambda.
  torch::Tensor x = torch::zeros({16, 12});
  {
    torch::NoGradGuard no_grad;
    moe.router.zero_();
    for (int64_t i = 0; i < 8; ++i) {
      moe.router[i][i] = 2.0;
      x[i][i] = 1.0;
      x[i + 8][i] = 1.0;
    }
  }
  const torch::Tensor logits = torch::matmul(x, moe.router.t());
  EXPECT_NEAR(SwitchBalanceLoss(logits, 0.001), 0.001, 1e-12);
  EXPECT_NEAR(LayerBalanceLoss(moe, x), 0.001, 1e-9);
}

TEST(LoadBalanceTest, AllTokensOnOneExpertGiveTheHandValue) {
  MixtureOfExpertsImpl moe(
      Options(Activation::kGelu, MixtureOptions::Router::kLearned));
  // Every token is e_0 and only router row 0 is non-zero, with logit ln 7:
  // f = (1, 0, ..., 0) and P_0 = 7 / (7 + 7 * e^0) = 1/2, so the loss is
  // lambda * 8 * 1 * 1/2 = 4 lambda.
  torch::Tensor x = torch::zeros({10, 12});
  {
    torch::NoGradGuard no_grad;
    moe.router.zero_();
    moe.router[0][0] = std::log(7.0);
    x.select(1, 0).fill_(1.0);
  }
  const torch::Tensor logits = torch::matmul(x, moe.router.t());
  EXPECT_NEAR(SwitchBalanceLoss(logits, 0.001), 0.004, 1e-9);  // ln 7 in float.
  EXPECT_NEAR(LayerBalanceLoss(moe, x), 0.004, 1e-8);
}

TEST(LoadBalanceTest, MatchesTheSwitchFormulaOnRandomRoutingForBothRouters) {
  for (auto router : {MixtureOptions::Router::kLearned,
                      MixtureOptions::Router::kSparsityAware}) {
    torch::manual_seed(2);
    MixtureOfExpertsImpl moe(Options(Activation::kGelu, router));
    SCOPED_TRACE(moe.router.defined() ? "learned" : "sparsity-aware");
    {
      // Scales at which the scores differ across experts: a unit-variance
      // W_g, or encoder columns with per-expert means (so s_j spreads over
      // (-1, 1), as in SparsityRouterTest).
      torch::NoGradGuard no_grad;
      if (moe.router.defined()) {
        moe.router.normal_(0.0, 1.0);
      } else {
        moe.encoders.copy_(torch::randn({8, 20, 12}) * 0.5 +
                           torch::randn({8, 1, 12}) * 0.5);
      }
    }
    const torch::Tensor x = torch::randn({40, 12});
    // The learned router's logits are W_g x (MoE-X Eq. 1); MoE-X's
    // scores s(x) (Eq. 7) come from Route, checked by SparsityRouterTest.
    const torch::Tensor scores = moe.router.defined()
                                     ? torch::matmul(x, moe.router.t())
                                     : moe.Route(x).scores;
    const double expected = SwitchBalanceLoss(scores, 0.001);
    std::printf("balance loss %.9f (lambda = 0.001)\n", expected);
    EXPECT_GT(expected - 0.001, 1e-4);  // Far from balanced.
    EXPECT_NEAR(LayerBalanceLoss(moe, x), expected, 1e-9);
    // Gradient reaches the router only through P_i (f_i has none): the loss
    // built from torch ops on the same scores must give the same gradient.
    moe.zero_grad();
    ASSERT_TRUE(moe.AuxiliaryLoss().requires_grad());
    moe.AuxiliaryLoss().backward();
    const torch::Tensor probabilities =
        torch::softmax(moe.router.defined() ? torch::matmul(x, moe.router.t())
                                            : moe.Route(x).scores,
                       -1);
    const torch::Tensor fraction =
        torch::one_hot(probabilities.argmax(-1).detach(), 8)
            .to(torch::kFloat)
            .mean(0);
    const torch::Tensor reference =
        0.001 * 8 * (fraction * probabilities.mean(0)).sum();
    const torch::Tensor& parameter =
        moe.router.defined() ? moe.router : moe.encoders;
    const torch::Tensor reference_grad =
        torch::autograd::grad({reference}, {parameter})[0];
    EXPECT_GT(reference_grad.abs().max().item<double>(), 0);
    EXPECT_TRUE(torch::allclose(parameter.grad(), reference_grad, 1e-4, 1e-9));
  }
  MixtureOfExpertsImpl moe(
      Options(Activation::kGelu, MixtureOptions::Router::kLearned));
  moe.eval();
  HookPoint none;
  moe.Forward(torch::randn({4, 12}), none);
  EXPECT_FALSE(moe.AuxiliaryLoss().defined());
}

TEST(UpcyclingTest, NoiselessUpcycleEqualsTheDenseParent) {
  torch::manual_seed(3);
  FeedForwardOptions dense_options;
  dense_options.d_model = 12;
  dense_options.d_ffn = 20;
  DenseMlpImpl dense(dense_options, Activation::kRelu);
  for (auto router : {MixtureOptions::Router::kSparsityAware,
                      MixtureOptions::Router::kLearned}) {
    MixtureOfExpertsImpl moe(Options(Activation::kRelu, router));
    moe.UpcycleFrom(dense, 0.0);
    const torch::Tensor x = torch::randn({7, 12});
    HookPoint none;
    // Identical experts and gates summing to 1: sum_j w_j f(x) = f(x).
    EXPECT_TRUE(torch::allclose(moe.Forward(x, none), dense.Forward(x, none),
                                1e-5, 1e-6));
  }
  // With noise, the parameter-free router no longer sees identical experts.
  MixtureOfExpertsImpl noisy(
      Options(Activation::kRelu, MixtureOptions::Router::kSparsityAware));
  noisy.UpcycleFrom(dense, 0.01);
  const torch::Tensor scores = noisy.Route(torch::randn({5, 12})).scores;
  EXPECT_GT((scores - scores.mean(-1, true)).abs().max().item<double>(), 0);
}

TEST(MixtureGradientTest, MatchesFiniteDifferencesAndSkipsUnselectedExperts) {
  for (auto router : {MixtureOptions::Router::kLearned,
                      MixtureOptions::Router::kSparsityAware}) {
    torch::manual_seed(4);
    MixtureOfExpertsImpl moe(Options(Activation::kGelu, router));
    moe.to(torch::kDouble);
    moe.eval();  // No load-balance term: the loss is the output alone.
    const torch::Tensor x = torch::randn({3, 12}, torch::kDouble);
    const torch::Tensor target = torch::randn({3, 12}, torch::kDouble);
    HookPoint none;
    auto loss = [&]() -> torch::Tensor {
      return (moe.Forward(x, none) - target).pow(2).sum();
    };
    std::vector<std::pair<std::string, torch::Tensor>> parameters = {
        {"encoders", moe.encoders}, {"decoders", moe.decoders}};
    if (moe.router.defined()) parameters.emplace_back("router", moe.router);
    const auto mismatches =
        testing::CheckGradients(loss, parameters, /*entries_per_parameter=*/9);
    EXPECT_TRUE(mismatches.empty()) << mismatches.front();
    // Decoders of experts no token selected get no gradient.
    const torch::Tensor selected =
        torch::zeros({8}, torch::kBool)
            .index_fill(0, moe.Route(x).experts.flatten(), true);
    EXPECT_EQ(moe.decoders.grad()
                  .index({selected.logical_not()})
                  .abs()
                  .sum()
                  .item<double>(),
              0);
  }
}

TEST(MixtureTest, ParameterCountsMatchTheMoeXTable) {
  // MoE-X chess shape (arXiv:2503.07639 Sec. 5.1; no expert biases here):
  // M * 2 * D * d (+ M * d router).
  MixtureOptions options =
      Options(Activation::kRelu, MixtureOptions::Router::kSparsityAware);
  options.d_model = 512;
  options.d_ffn = 2048;
  MixtureOfExpertsImpl moe_x(options);
  EXPECT_EQ(CountParameters(moe_x), 8 * 2 * 2048 * 512);
  options.router = MixtureOptions::Router::kLearned;
  MixtureOfExpertsImpl switch_moe(options);
  EXPECT_EQ(CountParameters(switch_moe),
            8 * 2 * 2048 * 512 + 4096);  // "+4,096 router params/layer".
}

}  // namespace
}  // namespace sparse_layers::layers
