#include "layers/ffn/mixture_of_experts.h"

#include <torch/torch.h>

#include <cmath>

#include "gtest/gtest.h"
#include "layers/core/parameter_count.h"
#include "layers/testing/gradient_check.h"

namespace sparse_layers::layers {
namespace {

MixtureOptions Options(Activation activation, MixtureOptions::Router router) {
  MixtureOptions options;
  options.d_model = 12;
  options.d_expert = 20;
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
  options.d_expert = 256;
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
  // (seed-moex.md 1.4).
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

TEST(LoadBalanceTest, MatchesTheSwitchFormula) {
  torch::manual_seed(2);
  MixtureOfExpertsImpl moe(
      Options(Activation::kGelu, MixtureOptions::Router::kLearned));
  moe.train();
  const torch::Tensor x = torch::randn({40, 12});
  HookPoint none;
  moe.Forward(x, none);
  const torch::Tensor p = torch::softmax(torch::matmul(x, moe.router.t()), -1);
  const torch::Tensor f =
      torch::one_hot(p.argmax(-1), 8).to(torch::kFloat).mean(0);
  const double expected = 0.001 * 8 * (f * p.mean(0)).sum().item<double>();
  EXPECT_NEAR(moe.AuxiliaryLoss().item<double>(), expected, 1e-9);
  // Perfect balance (f_i = P_i = 1/M) gives exactly lambda.
  const double balanced = 0.001 * 8 * 8 * (1.0 / 8) * (1.0 / 8);
  EXPECT_DOUBLE_EQ(balanced, 0.001);
  moe.eval();
  moe.Forward(x, none);
  EXPECT_FALSE(moe.AuxiliaryLoss().defined());
}

TEST(UpcyclingTest, NoiselessUpcycleEqualsTheDenseParent) {
  torch::manual_seed(3);
  FeedForwardOptions dense_options;
  dense_options.d_model = 12;
  dense_options.d_hidden = 20;
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
  // seed-moex.md 1.7 (no expert biases here): M * 2 * D * d (+ M * d router).
  MixtureOptions options =
      Options(Activation::kRelu, MixtureOptions::Router::kSparsityAware);
  options.d_model = 512;
  options.d_expert = 2048;
  MixtureOfExpertsImpl moe_x(options);
  EXPECT_EQ(CountParameters(moe_x), 8 * 2 * 2048 * 512);
  options.router = MixtureOptions::Router::kLearned;
  MixtureOfExpertsImpl switch_moe(options);
  EXPECT_EQ(CountParameters(switch_moe),
            8 * 2 * 2048 * 512 + 4096);  // "+4,096 router params/layer".
}

}  // namespace
}  // namespace sparse_layers::layers
