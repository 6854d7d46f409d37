#include "pipelines/train/replacement_metrics.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "layers/ffn/dense_mlp.h"
#include "layers/replacement/nmse.h"
#include "layers/replacement/sparse_replacement.h"
#include "models/gpt.h"
#include "models/tiny_gpt.h"

namespace sparse_layers::train {
namespace {

TEST(FiringCounterTest, CountsOnlyPositiveKeptValues) {
  FiringCounter counter(4);
  // Row 0 keeps units 0 (1.0) and 1 (0.0: kept by top-k, but not firing);
  // row 1 keeps units 2 and 1.
  counter.Add({torch::tensor({{1.0f, 0.0f}, {2.0f, 3.0f}}),
               torch::tensor({{0, 1}, {2, 1}}, torch::kLong)});
  EXPECT_EQ(counter.rows(), 2);
  EXPECT_DOUBLE_EQ(counter.L0(), 1.5);             // 3 firings / 2 rows.
  EXPECT_DOUBLE_EQ(counter.DeadFraction(), 0.25);  // Unit 3 never fired.
  EXPECT_TRUE(
      torch::allclose(counter.Frequencies(),
                      torch::tensor({0.5, 0.5, 0.5, 0.0}, torch::kDouble)));
}

TEST(CeRecoveredTest, IsTheShareOfTheZeroAblationGapClosed) {
  EXPECT_DOUBLE_EQ(CeRecovered(3.0, 5.0, 3.5), 0.75);
  EXPECT_DOUBLE_EQ(CeRecovered(3.0, 5.0, 3.0), 1.0);
  EXPECT_DOUBLE_EQ(CeRecovered(3.0, 5.0, 5.0), 0.0);
}

TEST(NormalisedRankTest, MatchesHandBuiltRanks) {
  EXPECT_DOUBLE_EQ(NormalisedRank(torch::eye(3)), 1.0);
  // Two independent columns and their sum: rank 2 of min(4, 3) = 3.
  const torch::Tensor a = torch::tensor({1.0f, 0.0f, 2.0f, 1.0f});
  const torch::Tensor b = torch::tensor({0.0f, 1.0f, 1.0f, 3.0f});
  EXPECT_NEAR(NormalisedRank(torch::stack({a, b, a + b}, 1)), 2.0 / 3, 1e-12);
  EXPECT_DOUBLE_EQ(NormalisedRank(torch::zeros({3, 2})), 0.0);
  // MxD Lemma 1: D diag(c) keeps D's rank when c has no zero entry.
  torch::manual_seed(0);
  const torch::Tensor d = torch::randn({8, 5}).mm(torch::randn({5, 6}));
  EXPECT_NEAR(NormalisedRank(d * torch::rand({6}).add(0.5).unsqueeze(0)),
              5.0 / 6, 1e-12);
}

// A Transcoder that is exactly the ReLU MLP (width H, K = H, the MLP's
// weights) spliced in by model.replacement reproduces the base model's CE
// (a check of the splice behind MxD's CE frontier, arXiv:2505.21364
// Sec. 3.1.1), and its normalised MSE is zero.
TEST(ReplacementSpliceTest, ExactMlpReplacementGivesTheBaseCrossEntropy) {
  layers::GptOptions options = layers::testing::TinyGptOptions(40, 16, 2);
  options.context_length = 12;
  options.ffn = "relu_mlp";
  options.d_ffn = 24;
  torch::manual_seed(0);
  auto base = *layers::GptImpl::Create(options);
  options.replacement = {"transcoder", 1, 24, 0, 24, false};
  options.variants.normalise_decoder = false;
  auto replaced = *layers::GptImpl::Create(options);
  {
    torch::NoGradGuard no_grad;
    const auto source = base->named_parameters();
    for (auto& item : replaced->named_parameters()) {
      if (const torch::Tensor* p = source.find(item.key())) {
        item.value().copy_(*p);
      }
    }
    auto mlp =
        std::dynamic_pointer_cast<layers::DenseMlpImpl>(base->blocks[1]->ffn);
    auto tc = std::dynamic_pointer_cast<layers::TranscoderImpl>(
        replaced->ReplacementLayer());
    ASSERT_TRUE(mlp && tc);
    tc->encoder.copy_(mlp->in->weight.t());
    tc->decoder.copy_(mlp->out->weight.t());
    // The MLP has no biases; the Transcoder's stay zero.
  }
  base->eval();
  replaced->eval();
  torch::manual_seed(1);
  const torch::Tensor tokens = torch::randint(0, 40, {3, 12}, torch::kLong);
  const torch::Tensor targets = torch::randint(0, 40, {3, 12}, torch::kLong);
  torch::NoGradGuard no_grad;
  const double ce_base = base->CrossEntropy(tokens, targets).item<double>();
  const double ce_replaced =
      replaced->CrossEntropy(tokens, targets).item<double>();
  EXPECT_NEAR(ce_replaced, ce_base, 1e-5);
  // A random (unfitted) layer does not.
  options.variants.normalise_decoder = true;
  auto unfitted = *layers::GptImpl::Create(options);
  unfitted->eval();
  EXPECT_GT(std::abs(unfitted->CrossEntropy(tokens, targets).item<double>() -
                     ce_base),
            1e-3);
}

TEST(ReplacementMetricsTest,
     FvuIsZeroForExactOneForTheMeanAndPooledOverChunks) {
  torch::manual_seed(1);
  const torch::Tensor y = torch::randn({64, 8});
  FvuAccumulator exact;
  exact.Add(y, y);
  EXPECT_NEAR(exact.Value(), 0.0, 1e-12);
  FvuAccumulator mean;
  mean.Add(y, y.mean(0, true).expand_as(y));
  EXPECT_NEAR(mean.Value(), 1.0, 1e-9);
  // Half the centred signal: FVU = 1/4; fed in two chunks.
  const torch::Tensor y_bar = y.mean(0, true);
  const torch::Tensor half = y_bar + 0.5 * (y - y_bar);
  FvuAccumulator chunks;
  chunks.Add(y.slice(0, 0, 20), half.slice(0, 0, 20));
  chunks.Add(y.slice(0, 20), half.slice(0, 20));
  EXPECT_NEAR(chunks.Value(), 0.25, 1e-6);  // float32 rows.
  EXPECT_EQ(chunks.rows(), 64);
}

}  // namespace
}  // namespace sparse_layers::train
