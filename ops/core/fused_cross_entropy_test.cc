#include "ops/core/fused_cross_entropy.h"

#include <torch/torch.h>

#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "ops/backend/allocation_counter.h"
#include "ops/testing/gradient_check.h"

namespace sparse_layers::layers {
namespace {

using testing::MaxRelativeError;

struct Result {
  torch::Tensor loss, grad_hidden, grad_weight;
};

// Loss and both gradients of `fused` (chunk > 0) or the reference (chunk 0).
Result LossAndGradients(const torch::Tensor& hidden,
                        const torch::Tensor& weight,
                        const torch::Tensor& targets, int64_t chunk) {
  const torch::Tensor h = hidden.detach().requires_grad_();
  const torch::Tensor w = weight.detach().requires_grad_();
  const torch::Tensor loss = chunk > 0 ? FusedCrossEntropy(h, w, targets, chunk)
                                       : UnfusedCrossEntropy(h, w, targets);
  loss.backward();
  return {loss.detach(), h.grad(), w.grad()};
}

// {N, d, V, chunk}: N not a multiple of the chunk, chunk 1, chunk == N,
// chunk > N, and an exact multiple.
class FusedCrossEntropyShapesTest
    : public ::testing::TestWithParam<
          std::tuple<int64_t, int64_t, int64_t, int64_t>> {};

TEST_P(FusedCrossEntropyShapesTest, MatchesTheUnfusedReferenceAndGradients) {
  const auto [n, d, vocab, chunk] = GetParam();
  at::set_num_threads(2);
  torch::manual_seed(n * 1000 + chunk);
  const torch::Tensor hidden = torch::randn({n, d});
  const torch::Tensor weight = torch::randn({vocab, d}) * 0.5;
  const torch::Tensor targets = torch::randint(vocab, {n}, torch::kLong);
  const Result fused = LossAndGradients(hidden, weight, targets, chunk);
  const Result reference = LossAndGradients(hidden, weight, targets, 0);
  // A real loss: above zero, and near log V for these random logits' scale.
  EXPECT_GT(reference.loss.item<double>(), 1.0);
  EXPECT_LT(MaxRelativeError(fused.loss, reference.loss), 1e-5);
  EXPECT_LT(MaxRelativeError(fused.grad_hidden, reference.grad_hidden), 1e-5);
  EXPECT_LT(MaxRelativeError(fused.grad_weight, reference.grad_weight), 1e-5);
}

INSTANTIATE_TEST_SUITE_P(
    Chunks, FusedCrossEntropyShapesTest,
    ::testing::Values(std::make_tuple(37, 16, 50, 8),     // 4 full + 5 left.
                      std::make_tuple(37, 16, 50, 1),     // One token a chunk.
                      std::make_tuple(37, 16, 50, 37),    // Chunk == N.
                      std::make_tuple(37, 16, 50, 1000),  // Chunk > N.
                      std::make_tuple(64, 32, 300, 16),   // Exact multiple.
                      std::make_tuple(130, 24, 513, 64)));

// Logits in the thousands: exp overflows float unless the row max is
// subtracted first, and the reference (log_softmax) does subtract it.
TEST(FusedCrossEntropyTest, LargeLogitsStayFiniteAndMatch) {
  at::set_num_threads(2);
  torch::manual_seed(3);
  const torch::Tensor hidden = torch::randn({29, 16}) * 30;
  const torch::Tensor weight = torch::randn({40, 16}) * 3;
  const torch::Tensor targets = torch::randint(40, {29}, torch::kLong);
  const Result fused = LossAndGradients(hidden, weight, targets, 6);
  const Result reference = LossAndGradients(hidden, weight, targets, 0);
  ASSERT_TRUE(std::isfinite(fused.loss.item<double>()));
  EXPECT_GT(reference.loss.item<double>(), 10.0);  // Really large logits.
  EXPECT_LT(MaxRelativeError(fused.loss, reference.loss), 1e-5);
  EXPECT_LT(MaxRelativeError(fused.grad_hidden, reference.grad_hidden), 1e-5);
  EXPECT_LT(MaxRelativeError(fused.grad_weight, reference.grad_weight), 1e-5);
}

// h = 0: every logit is 0, so the loss is log V exactly and
// dL/dh_i = (1/N) (mean_v W_v - W_{t_i}), dL/dW = 0.
TEST(FusedCrossEntropyTest, ZeroHiddenGivesLogVocabAndTheClosedFormGradient) {
  torch::manual_seed(4);
  const int64_t n = 5, vocab = 7;
  const torch::Tensor weight = torch::randn({vocab, 3});
  const torch::Tensor targets = torch::tensor({0, 6, 2, 2, 5}, torch::kLong);
  const Result fused =
      LossAndGradients(torch::zeros({n, 3}), weight, targets, 2);
  EXPECT_NEAR(fused.loss.item<double>(), std::log(7.0), 1e-6);
  const torch::Tensor expected =
      (weight.mean(0, true) - weight.index_select(0, targets)) / n;
  EXPECT_LT(MaxRelativeError(fused.grad_hidden, expected), 1e-6);
  EXPECT_EQ(fused.grad_weight.abs().max().item<float>(), 0.0f);
}

// Leading dimensions (B, T, d) flatten to N tokens, and dh comes back (B, T,
// d).
TEST(FusedCrossEntropyTest, FlattensLeadingDimensions) {
  torch::manual_seed(5);
  const torch::Tensor hidden = torch::randn({2, 9, 8});
  const torch::Tensor weight = torch::randn({30, 8});
  const torch::Tensor targets = torch::randint(30, {2, 9}, torch::kLong);
  const Result fused = LossAndGradients(hidden, weight, targets, 4);
  const Result reference = LossAndGradients(hidden, weight, targets, 0);
  EXPECT_EQ(fused.grad_hidden.sizes(), hidden.sizes());
  EXPECT_LT(MaxRelativeError(fused.loss, reference.loss), 1e-5);
  EXPECT_LT(MaxRelativeError(fused.grad_hidden, reference.grad_hidden), 1e-5);
}

// Double precision against central finite differences of the fused loss
// itself (not the reference), with a partial last chunk.
TEST(FusedCrossEntropyTest, GradientsMatchFiniteDifferences) {
  torch::manual_seed(6);
  const torch::Tensor hidden =
      torch::randn({7, 5}, torch::kDouble).requires_grad_();
  const torch::Tensor weight =
      torch::randn({11, 5}, torch::kDouble).requires_grad_();
  const torch::Tensor targets = torch::randint(11, {7}, torch::kLong);
  const std::vector<std::string> mismatches = testing::CheckGradients(
      [&] { return FusedCrossEntropy(hidden, weight, targets, 3); },
      {{"hidden", hidden}, {"weight", weight}}, /*entries_per_parameter=*/12,
      /*tolerance=*/1e-8);
  EXPECT_TRUE(mismatches.empty()) << mismatches.front();
}

// Same inputs and thread count: the same bits, loss and both gradients, with
// chunks, a partial chunk, and enough work to split over threads.
TEST(FusedCrossEntropyTest, RepeatRunsAreBitIdentical) {
  at::set_num_threads(2);
  torch::manual_seed(7);
  const torch::Tensor hidden = torch::randn({301, 64});
  const torch::Tensor weight = torch::randn({1000, 64}) * 0.1;
  const torch::Tensor targets = torch::randint(1000, {301}, torch::kLong);
  const Result first = LossAndGradients(hidden, weight, targets, 64);
  for (int repeat = 0; repeat < 3; ++repeat) {
    const Result again = LossAndGradients(hidden, weight, targets, 64);
    EXPECT_TRUE(torch::equal(first.loss, again.loss));
    EXPECT_TRUE(torch::equal(first.grad_hidden, again.grad_hidden));
    EXPECT_TRUE(torch::equal(first.grad_weight, again.grad_weight));
  }
}

// The point of the fusion: forward + backward at N = 512, V = 2048 never holds
// an (N, V) float tensor (4 MiB), while the reference holds several.
TEST(FusedCrossEntropyTest, PeakMemoryIsAChunkNotTheFullLogits) {
  at::set_num_threads(2);
  torch::manual_seed(8);
  const int64_t n = 512, d = 32, vocab = 2048, chunk = 64;
  const torch::Tensor hidden = torch::randn({n, d}).requires_grad_();
  const torch::Tensor weight = torch::randn({vocab, d}).requires_grad_();
  const torch::Tensor targets = torch::randint(vocab, {n}, torch::kLong);
  const int64_t logits_bytes = n * vocab * 4;
  backend::ScopedAllocationCounter counter;
  counter.ResetPeak();
  FusedCrossEntropy(hidden, weight, targets, chunk).backward();
  const int64_t fused_peak = counter.PeakExtraBytes();
  hidden.mutable_grad().reset();
  weight.mutable_grad().reset();
  counter.ResetPeak();
  UnfusedCrossEntropy(hidden, weight, targets).backward();
  const int64_t reference_peak = counter.PeakExtraBytes();
  // Fused: one (chunk, V) block per pass, plus dh (N, d) and dW (V, d) and
  // small (N) buffers; below 2 chunk blocks + both gradients.
  const int64_t gradients = (n + vocab) * d * 4;
  EXPECT_LT(fused_peak, 2 * chunk * vocab * 4 + 2 * gradients);
  EXPECT_LT(fused_peak, logits_bytes / 2);
  // Reference: at least the logits and their log-softmax at once.
  EXPECT_GE(reference_peak, 2 * logits_bytes);
}

}  // namespace
}  // namespace sparse_layers::layers
