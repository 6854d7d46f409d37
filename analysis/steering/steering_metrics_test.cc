#include "analysis/steering/steering_metrics.h"

#include <gtest/gtest.h>

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

TEST(SteeringMetricsTest, ContinuationNllIsTheMeanTokenLossOfTheContinuation) {
  layers::GptOptions options;
  options.vocab_size = 12;
  options.context_length = 16;
  options.d_model = 8;
  options.n_layers = 1;
  options.n_heads = 2;
  options.d_ffn = 16;
  torch::manual_seed(0);
  auto model = *layers::GptImpl::Create(options);
  model->eval();
  const std::vector<int64_t> prompt = {1, 2, 3}, continuation = {4, 5};
  // By hand: log-softmax of the logits at positions 2 and 3 (predicting 4, 5).
  torch::NoGradGuard no_grad;
  const torch::Tensor logits =
      model->forward(torch::tensor({1, 2, 3, 4}, torch::kLong).unsqueeze(0))[0];
  const torch::Tensor log_p = torch::log_softmax(logits, -1);
  const double expected =
      -(log_p[2][4].item<double>() + log_p[3][5].item<double>()) / 2;
  EXPECT_NEAR(ContinuationNll(*model, prompt, continuation), expected, 1e-6);
}

}  // namespace
}  // namespace sparse_layers::analysis
