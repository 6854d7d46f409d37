#include "analysis/steering/steering_metrics.h"

#include <gtest/gtest.h>

#include <cmath>

#include "models/tiny_gpt.h"

namespace sparse_layers::analysis {
namespace {

TEST(SteeringMetricsTest, TopTokensRankDistinctIdsByTheirLargestActivation) {
  const torch::Tensor activations =
      torch::tensor({0.5f, 2.0f, 1.0f, 3.0f, -1.0f, 2.5f});
  const torch::Tensor tokens = torch::tensor({7, 8, 7, 9, 10, 8});
  // Per id: 9 -> 3.0, 8 -> 2.5, 7 -> 1.0; 10 never activates.
  EXPECT_EQ(TopActivatingTokens(activations, tokens, 2),
            (std::set<int64_t>{8, 9}));
  EXPECT_EQ(TopActivatingTokens(activations, tokens, 10),
            (std::set<int64_t>{7, 8, 9}));
}

TEST(SteeringMetricsTest, ConceptShareCountsGeneratedTokensInTheSet) {
  EXPECT_DOUBLE_EQ(ConceptShare({{1, 2, 3}, {4, 1}}, {1, 4}), 3.0 / 5);
  EXPECT_DOUBLE_EQ(ConceptShare({}, {1}), 0.0);
}

std::shared_ptr<layers::GptImpl> TinyModel() {
  torch::manual_seed(0);
  auto model =
      *layers::GptImpl::Create(layers::testing::TinyGptOptions(12, 8, 1));
  model->eval();
  return model;
}

TEST(SteeringMetricsTest, ContinuationNllIsTheMeanTokenLossOfTheContinuation) {
  auto model = TinyModel();
  const std::vector<int64_t> prompt = {1, 2, 3}, continuation = {4, 5};
  // By hand: log-softmax of the logits at positions 2 and 3 (predicting 4, 5).
  torch::NoGradGuard no_grad;
  const torch::Tensor logits =
      model->forward(torch::tensor({1, 2, 3, 4}, torch::kLong).unsqueeze(0))[0];
  const torch::Tensor log_p = torch::log_softmax(logits, -1);
  const double expected =
      -(log_p[2][4].item<double>() + log_p[3][5].item<double>()) / 2;
  const std::vector<double> nlls =
      ContinuationNlls(*model, prompt, {continuation, {}, {4, 5, 6}, {7, 8}});
  ASSERT_EQ(nlls.size(), 4u);
  EXPECT_NEAR(nlls[0], expected, 1e-6);
  EXPECT_TRUE(std::isnan(nlls[1])) << "an empty continuation scores nothing";
  // Each row of the batch as if scored alone (lengths 2 and 3 mixed).
  for (const size_t row : {2, 3}) {
    const std::vector<std::vector<int64_t>> alone = {
        row == 2 ? std::vector<int64_t>{4, 5, 6} : std::vector<int64_t>{7, 8}};
    EXPECT_NEAR(nlls[row], ContinuationNlls(*model, prompt, alone)[0], 1e-6)
        << "row " << row;
  }
  EXPECT_NE(nlls[0], nlls[3]);
}

// Row r of a batch steered at units[r] by alphas[r], in both code layouts.
TEST(SteeringMetricsTest, RowUnitHookSteersEachRowAtItsOwnUnit) {
  const torch::Tensor codes = torch::zeros({3, 2, 4});
  const layers::HookFn hook = AddToRowUnitHook({1, 0, 3}, {2.0, 0.0, -1.5});
  for (const torch::Tensor& layout : {codes, codes.view({6, 4})}) {
    const torch::Tensor steered = hook(layout).view({3, 2, 4});
    torch::Tensor expected = torch::zeros({3, 2, 4});
    expected.select(0, 0).select(-1, 1).fill_(2.0);
    expected.select(0, 2).select(-1, 3).fill_(-1.5);
    EXPECT_TRUE(torch::equal(steered, expected)) << steered;
  }
  EXPECT_TRUE(torch::equal(codes, torch::zeros({3, 2, 4})))
      << "the hook must not write into its input";
  EXPECT_THROW(hook(torch::zeros({4, 4})), c10::Error);
}

TEST(SteeringMetricsTest, HeldOutEffectIsSteeredMinusUnsteeredMassAndLoss) {
  auto model = TinyModel();
  layers::HookPoint* hook = model->FindHook("blocks.0.ffn.hook_hidden");
  ASSERT_NE(hook, nullptr);
  const torch::Tensor inputs =
      torch::tensor({1, 2, 3, 4, 5, 6, 7, 8}, torch::kLong).view({2, 4});
  const torch::Tensor targets =
      torch::tensor({2, 3, 4, 5, 6, 7, 8, 9}, torch::kLong).view({2, 4});
  const HeldOutText text = MakeHeldOutText(*model, inputs, targets);
  const std::set<int64_t> concept_tokens = {3, 7};

  // By hand: unit 5 of the FFN hidden layer raised by 3 at every position.
  torch::NoGradGuard no_grad;
  const torch::Tensor before = torch::log_softmax(model->forward(inputs), -1);
  hook->Add([](const torch::Tensor& h) {
    torch::Tensor out = h.clone();
    out.select(-1, 5).add_(3.0);
    return out;
  });
  const torch::Tensor after = torch::log_softmax(model->forward(inputs), -1);
  hook->Clear();
  auto mass = [](const torch::Tensor& lp) {
    return (lp.select(-1, 3).exp() + lp.select(-1, 7).exp())
        .mean()
        .item<double>();
  };
  auto ce = [&](const torch::Tensor& lp) {
    return -lp.gather(-1, targets.unsqueeze(-1)).mean().item<double>();
  };

  const HeldOutEffect effect =
      HeldOutSteeringEffect(*model, *hook, 5, 3.0, text, concept_tokens);
  EXPECT_NEAR(effect.concept_mass_gain, mass(after) - mass(before), 1e-6);
  EXPECT_NEAR(effect.ce_increase, ce(after) - ce(before), 1e-6);
  EXPECT_GT(std::abs(effect.ce_increase), 1e-4);  // the unit does something
  // The steering hook is gone afterwards, and alpha = 0 changes nothing.
  EXPECT_TRUE(
      torch::allclose(torch::log_softmax(model->forward(inputs), -1), before));
  const HeldOutEffect none =
      HeldOutSteeringEffect(*model, *hook, 5, 0.0, text, concept_tokens);
  EXPECT_NEAR(none.concept_mass_gain, 0.0, 1e-7);
  EXPECT_NEAR(none.ce_increase, 0.0, 1e-6);
}

TEST(SteeringMetricsTest, ChooseAlphaScaleTakesTheBestGainWithinTheBudget) {
  const std::vector<SweepPoint> sweep = {{1.0, {0.01, 0.1}},
                                         {2.0, {0.05, 0.4}},
                                         {4.0, {0.04, 0.9}},
                                         {8.0, {0.30, 2.5}}};
  // 8 has the largest gain but costs 2.5 nats; among the rest 2 gains most.
  EXPECT_DOUBLE_EQ(ChooseAlphaScale(sweep, 1.0), 2.0);
  EXPECT_DOUBLE_EQ(ChooseAlphaScale(sweep, 3.0), 8.0);
  // Nothing within the budget: the gentlest scale.
  EXPECT_DOUBLE_EQ(ChooseAlphaScale(sweep, 0.05), 1.0);
}

}  // namespace
}  // namespace sparse_layers::analysis
