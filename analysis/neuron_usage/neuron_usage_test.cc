#include "analysis/neuron_usage/neuron_usage.h"

#include <string>

#include "absl/strings/str_split.h"
#include "datasets/text/test_token_split.h"
#include "gtest/gtest.h"
#include "models/gpt.h"
#include "models/tiny_gpt.h"

namespace sparse_layers::analysis {
namespace {

TEST(NeuronUsageTest, GiniAgainstThePairwiseDefinition) {
  EXPECT_DOUBLE_EQ(Gini({1, 1, 1, 1}), 0);
  // One neuron takes everything: (n - 1) / n.
  EXPECT_DOUBLE_EQ(Gini({0, 0, 0, 4}), 0.75);
  // Sum |x_i - x_j| over ordered pairs 20, / (2 x 16 x 2.5) = 0.25.
  EXPECT_DOUBLE_EQ(Gini({4, 1, 3, 2}), 0.25);
  EXPECT_DOUBLE_EQ(Gini({0, 0}), 0);
}

// n = 2: neurons 0 = (0, 0), 1 = (0, 1), 2 = (1, 0), 3 = (1, 1); one channel,
// k = 2, one sequence of tokens 5 5 6 selecting {0, 1}, {0, 1}, {0, 2}.
torch::Tensor Routing() {
  return torch::tensor({0, 1, 0, 1, 0, 2}, torch::kLong).view({3, 1, 2});
}

TEST(NeuronUsageTest, BlockUsageByHand) {
  const torch::Tensor tokens = torch::tensor({5, 5, 6}).view({1, 3});
  auto usage = UsageOfBlock(Routing(), tokens, 2);
  ASSERT_TRUE(usage.ok()) << usage.status();
  EXPECT_EQ(usage->neurons, 4);
  EXPECT_DOUBLE_EQ(usage->used_fraction, 0.75);
  // Counts 3 2 1 0: 20 / 48; the unique-token rows 0 and 2: 2 1 1 0, 0.375.
  EXPECT_NEAR(usage->gini, 20.0 / 48, 1e-12);
  EXPECT_NEAR(usage->gini_unique_tokens, 0.375, 1e-12);
  // P(j | i) means over the used neurons 0, 1, 2: same first sub-key
  // (2/3 + 1 + 0) / 3, same second (1/3 + 0 + 1) / 3, neither 0.
  EXPECT_NEAR(usage->coactivation_same_first, (2.0 / 3 + 1) / 3, 1e-12);
  EXPECT_NEAR(usage->coactivation_same_second, (1.0 / 3 + 1) / 3, 1e-12);
  EXPECT_DOUBLE_EQ(usage->coactivation_other, 0);
}

TEST(NeuronUsageTest, CoactivationMapRowsAreConditionalProbabilities) {
  const torch::Tensor map = CoactivationMap(Routing(), 4);
  EXPECT_NEAR(map[0][1].item<double>(), 2.0 / 3, 1e-12);
  EXPECT_NEAR(map[0][2].item<double>(), 1.0 / 3, 1e-12);
  EXPECT_DOUBLE_EQ(map[1][0].item<double>(), 1);
  EXPECT_DOUBLE_EQ(map[2][0].item<double>(), 1);
  EXPECT_DOUBLE_EQ(map[3][0].item<double>(), 0);  // Never selected.
  EXPECT_DOUBLE_EQ(map[0][0].item<double>(), 0);
}

TEST(NeuronUsageTest, RefusesMismatchedRoutingAndOutOfRangeNeurons) {
  EXPECT_FALSE(
      UsageOfBlock(Routing(), torch::tensor({5, 5}).view({1, 2}), 2).ok());
  const torch::Tensor out_of_range =
      torch::tensor({0, 9}, torch::kLong).view({1, 1, 2});
  EXPECT_FALSE(
      UsageOfBlock(out_of_range, torch::tensor({5}).view({1, 1}), 2).ok());
}

TEST(NeuronUsageTest, TablesOfAProductKeyModel) {
  torch::manual_seed(0);
  layers::GptOptions options = layers::testing::TinyGptOptions(50, 16, 2);
  options.ffn = "sgatlin";
  options.d_ffn = 16;  // n = 4.
  options.n_experts = 2;
  options.top_k = 3;
  options.d_key = 8;
  auto model = layers::GptImpl::Create(options);
  ASSERT_TRUE(model.ok()) << model.status();
  (*model)->eval();
  auto tokens = datasets::RandomTokenSplit("usage", "validation", 50, 400, 1);
  ASSERT_NE(tokens, nullptr);
  NeuronUsageTables tables;
  NeuronUsageOptions usage_options;
  usage_options.sequences = 8;
  usage_options.sequence_length = 16;
  usage_options.map_neurons = 8;
  ASSERT_TRUE(
      tables.AddModel("sgatlin", 3, **model, *tokens, usage_options).ok());
  const std::vector<std::string> usage =
      absl::StrSplit(tables.usage(), '\n', absl::SkipEmpty());
  ASSERT_EQ(usage.size(), 3u);  // Header and two blocks.
  EXPECT_EQ(usage[1].substr(0, 16), "3,sgatlin,0,16,0");
  // The penultimate block (0 of 2) is mapped: 8 x 8 cells.
  const std::vector<std::string> map =
      absl::StrSplit(tables.coactivation(), '\n', absl::SkipEmpty());
  EXPECT_EQ(map.size(), 1u + 64);
  EXPECT_EQ(map[1].substr(0, 14), "3,sgatlin,0,0,");
}

TEST(NeuronUsageTest, RefusesADenseFfn) {
  auto model =
      layers::GptImpl::Create(layers::testing::TinyGptOptions(50, 16, 2));
  ASSERT_TRUE(model.ok());
  auto tokens = datasets::RandomTokenSplit("dense", "validation", 50, 400, 1);
  ASSERT_NE(tokens, nullptr);
  NeuronUsageTables tables;
  EXPECT_FALSE(
      tables.AddModel("dense", 1, **model, *tokens, NeuronUsageOptions()).ok());
}

}  // namespace
}  // namespace sparse_layers::analysis
