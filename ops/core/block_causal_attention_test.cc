#include "ops/core/block_causal_attention.h"

#include <torch/torch.h>

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
  torch::Tensor output, grad_q, grad_k, grad_v;
};

// Output and the gradients of sum(output * weights) (a generic upstream
// gradient) for the block kernel (block > 0) or the dense reference (0).
Result OutputAndGradients(const torch::Tensor& q, const torch::Tensor& k,
                          const torch::Tensor& v, const torch::Tensor& weights,
                          int64_t block) {
  const torch::Tensor q_ = q.detach().requires_grad_();
  const torch::Tensor k_ = k.detach().requires_grad_();
  const torch::Tensor v_ = v.detach().requires_grad_();
  const torch::Tensor output = block > 0
                                   ? BlockCausalAttention(q_, k_, v_, block)
                                   : DenseCausalAttention(q_, k_, v_);
  (output * weights).sum().backward();
  return {output.detach(), q_.grad(), k_.grad(), v_.grad()};
}

// {T, block, Dv}: T not a multiple of the block, block 1, block == T,
// block > T, an exact multiple; values as wide as the keys or not (Lorsa's
// groups mix values wider than their QK width).
class BlockCausalAttentionShapesTest
    : public ::testing::TestWithParam<std::tuple<int64_t, int64_t, int64_t>> {};

TEST_P(BlockCausalAttentionShapesTest, MatchesTheDenseReferenceAndGradients) {
  const auto [length, block, value_width] = GetParam();
  at::set_num_threads(2);
  torch::manual_seed(length * 100 + block);
  const torch::Tensor q = torch::randn({2, 3, length, 8});
  const torch::Tensor k = torch::randn({2, 3, length, 8});
  const torch::Tensor v = torch::randn({2, 3, length, value_width});
  const torch::Tensor weights = torch::randn({2, 3, length, value_width});
  const Result blocked = OutputAndGradients(q, k, v, weights, block);
  const Result reference = OutputAndGradients(q, k, v, weights, 0);
  EXPECT_LT(MaxRelativeError(blocked.output, reference.output), 1e-5);
  EXPECT_LT(MaxRelativeError(blocked.grad_q, reference.grad_q), 1e-5);
  EXPECT_LT(MaxRelativeError(blocked.grad_k, reference.grad_k), 1e-5);
  EXPECT_LT(MaxRelativeError(blocked.grad_v, reference.grad_v), 1e-5);
}

INSTANTIATE_TEST_SUITE_P(
    Blocks, BlockCausalAttentionShapesTest,
    ::testing::Values(std::make_tuple(37, 8, 8), std::make_tuple(37, 1, 8),
                      std::make_tuple(37, 37, 8), std::make_tuple(37, 100, 8),
                      std::make_tuple(64, 16, 8), std::make_tuple(37, 8, 20),
                      std::make_tuple(64, 64, 3)));

// Row 0 attends only to key 0, so its output is v_0 exactly whatever q and
// k are; the last row of one block sees every earlier key equally when q = 0.
TEST(BlockCausalAttentionTest, FirstRowIsItsValueAndZeroQueryAverages) {
  torch::manual_seed(2);
  const torch::Tensor q = torch::zeros({1, 10, 4});
  const torch::Tensor k = torch::randn({1, 10, 4});
  const torch::Tensor v = torch::randn({1, 10, 4});
  const torch::Tensor output = BlockCausalAttention(q, k, v, 3);
  EXPECT_TRUE(torch::allclose(output[0][0], v[0][0]));
  for (int64_t row = 0; row < 10; ++row) {
    EXPECT_TRUE(torch::allclose(output[0][row],
                                v[0].narrow(0, 0, row + 1).mean(0), 1e-5, 1e-6))
        << "row " << row;
  }
}

// Double precision against central finite differences of the kernel itself.
TEST(BlockCausalAttentionTest, GradientsMatchFiniteDifferences) {
  torch::manual_seed(3);
  const auto make = [] {
    return torch::randn({2, 7, 3}, torch::kDouble).requires_grad_();
  };
  const torch::Tensor q = make(), k = make(), v = make();
  const torch::Tensor weights = torch::randn({2, 7, 3}, torch::kDouble);
  const std::vector<std::string> mismatches = testing::CheckGradients(
      [&] { return (BlockCausalAttention(q, k, v, 3) * weights).sum(); },
      {{"q", q}, {"k", k}, {"v", v}}, /*entries_per_parameter=*/12,
      /*tolerance=*/1e-8);
  EXPECT_TRUE(mismatches.empty()) << mismatches.front();
}

// Same inputs and thread count: the same bits, output and gradients.
TEST(BlockCausalAttentionTest, RepeatRunsAreBitIdentical) {
  at::set_num_threads(2);
  torch::manual_seed(4);
  const torch::Tensor q = torch::randn({4, 4, 100, 16});
  const torch::Tensor k = torch::randn({4, 4, 100, 16});
  const torch::Tensor v = torch::randn({4, 4, 100, 16});
  const torch::Tensor weights = torch::randn({4, 4, 100, 16});
  const Result first = OutputAndGradients(q, k, v, weights, 32);
  for (int repeat = 0; repeat < 3; ++repeat) {
    const Result again = OutputAndGradients(q, k, v, weights, 32);
    EXPECT_TRUE(torch::equal(first.output, again.output));
    EXPECT_TRUE(torch::equal(first.grad_q, again.grad_q));
    EXPECT_TRUE(torch::equal(first.grad_k, again.grad_k));
    EXPECT_TRUE(torch::equal(first.grad_v, again.grad_v));
  }
}

// The point of the blocks: at T = 256 and blocks of 64 the forward keeps
// 10/16 of the T x T scores, once; the dense form keeps the masked scores and
// their softmax, two full squares.
TEST(BlockCausalAttentionTest, ForwardHoldsTheCausalHalfOnce) {
  at::set_num_threads(2);
  torch::manual_seed(5);
  const int64_t n = 8, length = 256, head_dim = 16;
  const torch::Tensor q = torch::randn({n, length, head_dim}).requires_grad_();
  const torch::Tensor k = torch::randn({n, length, head_dim}).requires_grad_();
  const torch::Tensor v = torch::randn({n, length, head_dim}).requires_grad_();
  const int64_t square_bytes = n * length * length * 4;
  backend::ScopedAllocationCounter counter;
  counter.ResetPeak();
  torch::Tensor blocked = BlockCausalAttention(q, k, v, 64);
  const int64_t blocked_held = counter.PeakExtraBytes();
  blocked.reset();
  counter.ResetPeak();
  torch::Tensor dense = DenseCausalAttention(q, k, v);
  const int64_t dense_held = counter.PeakExtraBytes();
  // Saved patterns (10/16 of a square) plus one transient block's scores.
  EXPECT_LT(blocked_held, square_bytes * 10 / 16 + square_bytes / 4 +
                              3 * n * length * head_dim * 4);
  EXPECT_GE(dense_held, 2 * square_bytes);
}

// Without a backward to come (GradMode off, or no input requiring grad) the
// forward keeps no patterns: it holds the last block's scores and pattern and
// the output, and its values are the same bits.
TEST(BlockCausalAttentionTest, ForwardWithoutGradientKeepsNoPatterns) {
  at::set_num_threads(2);
  torch::manual_seed(5);
  const int64_t n = 8, length = 256, head_dim = 16;
  const torch::Tensor q = torch::randn({n, length, head_dim});
  const torch::Tensor k = torch::randn({n, length, head_dim});
  const torch::Tensor v = torch::randn({n, length, head_dim});
  const torch::Tensor q_grad = q.clone().requires_grad_();
  const int64_t square_bytes = n * length * length * 4;
  const int64_t output_bytes = n * length * head_dim * 4;
  backend::ScopedAllocationCounter counter;
  counter.ResetPeak();
  torch::Tensor with_grad = BlockCausalAttention(q_grad, k, v, 64);
  const int64_t grad_held = counter.PeakExtraBytes();
  torch::Tensor expected = with_grad.detach().clone();
  with_grad.reset();
  counter.ResetPeak();
  torch::Tensor no_grad_mode;
  {
    torch::NoGradGuard no_grad;
    no_grad_mode = BlockCausalAttention(q_grad, k, v, 64);
  }
  const int64_t no_grad_mode_held = counter.PeakExtraBytes();
  counter.ResetPeak();
  torch::Tensor no_input_grad = BlockCausalAttention(q, k, v, 64);
  const int64_t no_input_grad_held = counter.PeakExtraBytes();
  EXPECT_GE(grad_held, square_bytes * 10 / 16);
  for (const int64_t held : {no_grad_mode_held, no_input_grad_held}) {
    // The last block's scores and pattern (a quarter square each), output.
    EXPECT_LE(held, square_bytes / 2 + 2 * output_bytes);
    EXPECT_LT(held, grad_held - square_bytes / 4);
  }
  EXPECT_TRUE(torch::equal(no_grad_mode, expected));
  EXPECT_TRUE(torch::equal(no_input_grad, expected));
}

}  // namespace
}  // namespace sparse_layers::layers
