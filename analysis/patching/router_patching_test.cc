#include "analysis/patching/router_patching.h"

#include <torch/torch.h>

#include <cmath>

#include "gtest/gtest.h"
#include "models/tiny_gpt.h"

namespace sparse_layers::analysis {
namespace {

std::shared_ptr<layers::GptImpl> TinyModel(const std::string& ffn) {
  config::ModelConfig model = layers::testing::TinyModelConfig(50, 16, 2);
  model.set_ffn(ffn);
  if (ffn == "sgatlin") {
    model.set_d_ffn(64);
    model.set_n_experts(2);
    model.set_top_k(4);
  }
  model.set_d_key(8);
  model.set_positions(config::ModelConfig::ROTARY);
  torch::manual_seed(7);
  auto options = layers::GptOptionsFromConfig(model);
  EXPECT_TRUE(options.ok()) << options.status();
  auto gpt = layers::GptImpl::Create(*options);
  EXPECT_TRUE(gpt.ok()) << gpt.status();
  (*gpt)->eval();
  return *gpt;
}

// A prompt patched with its own router state (or FFN activations) is
// unchanged, at every position and block set; another prompt's state moves
// the output (arXiv:2606.07414 Sec. 4.3).
TEST(RouterPatchingTest, OwnStateChangesNothingAnotherPromptsDoes) {
  for (const std::string ffn : {"sgatlin", "gelu_mlp"}) {
    auto model = TinyModel(ffn);
    const PatchKind kind =
        ffn == "sgatlin" ? PatchKind::kRouting : PatchKind::kFfnHidden;
    const torch::Tensor clean = torch::randint(0, 50, {3, 6}, torch::kLong);
    const torch::Tensor other = torch::randint(0, 50, {3, 6}, torch::kLong);
    const RecordedRun own = RunAndRecord(*model, clean).value();
    const RecordedRun counterfactual = RunAndRecord(*model, other).value();
    if (ffn == "sgatlin") {
      ASSERT_TRUE(own.routing[1].scores.defined());
      EXPECT_EQ(own.routing[1].scores.size(0), 18);
    }
    for (int position : {0, 3, 5}) {
      for (const std::vector<int>& blocks :
           {std::vector<int>{0}, std::vector<int>{1}, std::vector<int>{0, 1}}) {
        EXPECT_TRUE(torch::equal(
            RunPatched(*model, clean, own, kind, blocks, position).value(),
            own.last_logits))
            << ffn << " position " << position;
      }
    }
    const torch::Tensor patched =
        RunPatched(*model, clean, counterfactual, kind, {0, 1}, 5).value();
    EXPECT_FALSE(torch::allclose(patched, own.last_logits)) << ffn;
    // At the last position, the final logits of a patched block 1 differ.
    EXPECT_FALSE(torch::allclose(
        RunPatched(*model, clean, counterfactual, kind, {1}, 5).value(),
        own.last_logits))
        << ffn;
  }
}

// A block the model lacks, or routing patched into a dense FFN, is an error.
TEST(RouterPatchingTest, BadBlocksAreErrorsNotCrashes) {
  auto dense = TinyModel("gelu_mlp");
  const torch::Tensor tokens = torch::randint(0, 50, {2, 6}, torch::kLong);
  const RecordedRun run = RunAndRecord(*dense, tokens).value();
  const absl::StatusOr<torch::Tensor> routing =
      RunPatched(*dense, tokens, run, PatchKind::kRouting, {0}, 2);
  ASSERT_FALSE(routing.ok());
  EXPECT_NE(routing.status().message().find("block 0 has no product-key FFN"),
            std::string::npos);
  // Block 0's hook is in place when block 7 fails: the error removes it.
  EXPECT_FALSE(
      RunPatched(*dense, tokens, run, PatchKind::kFfnHidden, {0, 7}, 2).ok());
  RecordedRun other = run;
  other.ffn_hidden.clear();  // A run recorded on another model.
  EXPECT_FALSE(
      RunPatched(*dense, tokens, other, PatchKind::kFfnHidden, {0}, 2).ok());
  // The failed patches left no hook behind: an unpatched run is unchanged.
  EXPECT_TRUE(torch::equal(RunAndRecord(*dense, tokens).value().last_logits,
                           run.last_logits));
}

TEST(RouterPatchingTest, EffectSummaryByHand) {
  const auto t = [](std::vector<double> v) { return torch::tensor(v); };
  const PatchEffect effect =
      SummariseEffect(t({2, 4}), t({-2, -4}), t({0, -5}));
  // NIE (2 - 0) / 4 = 0.5 and (4 + 5) / 8 = 1.125.
  EXPECT_NEAR(effect.mean_nie, 0.8125, 1e-6);
  EXPECT_DOUBLE_EQ(effect.rank_flip_rate, 0.5);
  EXPECT_DOUBLE_EQ(effect.mean_logit_difference, -2.5);
  const torch::Tensor logits = t({1, 5, 2, 0, 3, 9}).view({2, 3});
  EXPECT_TRUE(torch::equal(
      LogitDifference(logits, torch::tensor({1, 0}), torch::tensor({2, 2})),
      t({3, -9})));
}

double Mean(const std::vector<double>& values) {
  double sum = 0;
  for (double v : values) sum += v;
  return sum / static_cast<double>(values.size());
}

// Two categories on disjoint units: every neighbour agrees; shuffling the
// categories brings agreement down to about the chance of 0.5.
TEST(RouterPatchingTest, NeighbourAgreementOfPlantedClusters) {
  torch::manual_seed(3);
  const int64_t n = 60, k = 4;
  std::vector<int> category(n);
  torch::Tensor indices = torch::empty({n, k}, torch::kLong);
  for (int64_t i = 0; i < n; ++i) {
    category[i] = i % 2;
    indices[i] = torch::randperm(6, torch::kLong).slice(0, 0, k) +
                 (category[i] ? 10 : 0);
  }
  const torch::Tensor scores = torch::rand({n, k}) + 0.5;
  const torch::Tensor vectors = GatingVectors(indices, scores, 16);
  EXPECT_EQ(vectors.sizes(), torch::IntArrayRef({n, 16}));
  EXPECT_FLOAT_EQ(vectors[1][indices[1][2].item<int64_t>()].item<float>(),
                  scores[1][2].item<float>());
  const NeighbourAgreements result =
      NeighbourAgreementPerVector(vectors, category, nullptr, 5, 1);
  EXPECT_DOUBLE_EQ(Mean(result.agreement), 1.0);
  EXPECT_LT(Mean(result.shuffled), 0.7);
  EXPECT_GT(Mean(result.shuffled), 0.3);
}

// Tokens 0, 1 of class 0 and 2, 3 of class 1, 15 occurrences each. Vectors
// that only encode the token agree with the class through same-token
// neighbours alone: among other tokens' vectors their neighbours are random
// (about 1/3 agree). Vectors that encode the class agree either way
// (arXiv:2606.07414 Sec. 4.1: structure beyond the input token).
TEST(RouterPatchingTest, OtherTokenNeighboursSeparateClassFromToken) {
  torch::manual_seed(5);
  const int64_t n = 60;
  std::vector<int> token(n), category(n);
  torch::Tensor token_only = torch::zeros({n, 6});
  torch::Tensor by_class = torch::zeros({n, 6});
  for (int64_t i = 0; i < n; ++i) {
    token[i] = static_cast<int>(i % 4);
    category[i] = token[i] / 2;
    token_only[i][2 + token[i]] = 1.0;
    by_class[i][category[i]] = 1.0;
    by_class[i][2 + token[i]] = 0.3;
  }
  token_only += 0.05 * torch::randn({n, 6});
  by_class += 0.05 * torch::randn({n, 6});
  const auto mean_agreement = [&](const torch::Tensor& v,
                                  const std::vector<int>* exclude) {
    return Mean(
        NeighbourAgreementPerVector(v, category, exclude, 5, 1).agreement);
  };
  EXPECT_DOUBLE_EQ(mean_agreement(token_only, nullptr), 1.0);
  EXPECT_DOUBLE_EQ(mean_agreement(by_class, nullptr), 1.0);
  const double token_only_other = mean_agreement(token_only, &token);
  EXPECT_GT(token_only_other, 0.15);
  EXPECT_LT(token_only_other, 0.55);
  EXPECT_DOUBLE_EQ(mean_agreement(by_class, &token), 1.0);
  // Every neighbour drawn among other tokens.
  const NeighbourAgreements by_token =
      NeighbourAgreementPerVector(token_only, token, &token, 5, 1);
  EXPECT_DOUBLE_EQ(Mean(by_token.agreement), 0.0);
}

TEST(RouterPatchingTest, MeanAgreementByGroupCountsEachGroupOnce) {
  const NeighbourAgreements agreements{{1.0, 0.0, 0.5}, {0.2, 0.4, 0.6}};
  const std::vector<GroupAgreement> groups =
      MeanAgreementByGroup(agreements, {7, 3, 7});
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].group, 3);
  EXPECT_EQ(groups[0].vectors, 1);
  EXPECT_DOUBLE_EQ(groups[0].agreement, 0.0);
  EXPECT_DOUBLE_EQ(groups[0].shuffled, 0.4);
  EXPECT_EQ(groups[1].group, 7);
  EXPECT_EQ(groups[1].vectors, 2);
  EXPECT_DOUBLE_EQ(groups[1].agreement, 0.75);
  EXPECT_DOUBLE_EQ(groups[1].shuffled, 0.4);
}

}  // namespace
}  // namespace sparse_layers::analysis
