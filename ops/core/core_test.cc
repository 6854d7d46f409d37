#include <torch/torch.h>

#include <cmath>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ops/core/rms_norm.h"
#include "ops/core/rotary.h"
#include "ops/core/topk.h"
#include "ops/testing/gradient_check.h"

namespace sparse_layers::layers {
namespace {

TEST(RmsNormTest, MatchesTheFormula) {
  torch::manual_seed(0);
  RmsNorm norm(8);
  {
    torch::NoGradGuard no_grad;
    norm->weight.copy_(torch::arange(1, 9, torch::kFloat));
  }
  const torch::Tensor x = torch::randn({3, 8});
  const torch::Tensor expected =
      x / torch::sqrt(x.pow(2).mean(-1, true) + 1e-6) * torch::arange(1, 9);
  EXPECT_TRUE(torch::allclose(norm(x), expected, 1e-5, 1e-6));
  // Scale invariance: RMSNorm(c x) = RMSNorm(x) for c > 0.
  EXPECT_TRUE(torch::allclose(norm(7 * x), norm(x), 1e-4, 1e-5));
}

TEST(RotaryTest, PreservesNormsAndScoresDependOnOffsetOnly) {
  torch::manual_seed(1);
  RotaryEmbedding rotary(16, 64);
  const torch::Tensor q = torch::randn({16});
  const torch::Tensor k = torch::randn({16});
  // Same vector at every position: rotated copies.
  const torch::Tensor rq = rotary.Apply(q.expand({64, 16}).contiguous());
  const torch::Tensor rk = rotary.Apply(k.expand({64, 16}).contiguous());
  EXPECT_TRUE(torch::allclose(rq.norm(2, -1), q.norm().expand({64}), 1e-4));
  // <R_m q, R_n k> depends only on m - n (RoFormer eq. 16).
  const double score_a = torch::dot(rq[10], rk[3]).item<double>();
  const double score_b = torch::dot(rq[40], rk[33]).item<double>();
  EXPECT_NEAR(score_a, score_b, 1e-4);
  EXPECT_TRUE(torch::allclose(rq[0], q, 1e-6));  // Position 0 is unrotated.
}

// The fused kernel against index_select-multiply-sum, values and both
// gradients, with rows repeated within and across tokens (so the scatter
// accumulates) and enough tokens and columns to split over threads.
TEST(SparseDotTest, MatchesTheGatheredReferenceAndItsGradients) {
  torch::manual_seed(0);
  at::set_num_threads(2);
  const torch::Tensor x = torch::randn({300, 40}, torch::requires_grad());
  const torch::Tensor rows = torch::randn({17, 40}, torch::requires_grad());
  const torch::Tensor indices = torch::randint(17, {300, 6}, torch::kLong);
  const torch::Tensor upstream = torch::randn({300, 6});
  const torch::Tensor fused = SparseDot(x, rows, indices);
  const auto fused_grads =
      torch::autograd::grad({fused}, {x, rows}, {upstream});
  const torch::Tensor reference = SparseDotReference(x, rows, indices);
  const auto reference_grads =
      torch::autograd::grad({reference}, {x, rows}, {upstream});
  EXPECT_TRUE(torch::allclose(fused, reference, 1e-5, 1e-5));
  EXPECT_TRUE(torch::allclose(fused_grads[0], reference_grads[0], 1e-5, 1e-5));
  EXPECT_TRUE(torch::allclose(fused_grads[1], reference_grads[1], 1e-4, 1e-5));
  // One entry by hand: rows[indices[b, j]] . x[b].
  EXPECT_NEAR(
      fused[7][3].item<float>(),
      torch::dot(rows[indices[7][3].item<int64_t>()], x[7]).item<float>(),
      1e-5);
  // A row no token selects gets no gradient.
  const torch::Tensor unused = torch::ones({17}, torch::kBool)
                                   .index_put_({indices.reshape({-1})}, false);
  if (unused.any().item<bool>()) {
    EXPECT_EQ(fused_grads[1].index({unused}).abs().sum().item<float>(), 0);
  }
}

// SparseDecode's fused kernel against embedding_bag, values and both
// gradients, with (..., k) codes, repeated rows and a width not a multiple of
// the vector lanes.
TEST(SparseDecodeTest, MatchesTheEmbeddingBagReferenceAndItsGradients) {
  torch::manual_seed(1);
  at::set_num_threads(2);
  const torch::Tensor values = torch::randn({5, 60, 6}, torch::requires_grad());
  const torch::Tensor rows = torch::randn({17, 43}, torch::requires_grad());
  const torch::Tensor indices = torch::randint(17, {5, 60, 6}, torch::kLong);
  const torch::Tensor upstream = torch::randn({5, 60, 43});
  const torch::Tensor fused = SparseDecode({values, indices}, rows);
  ASSERT_EQ(fused.sizes(), upstream.sizes());
  const auto fused_grads =
      torch::autograd::grad({fused}, {values, rows}, {upstream});
  const torch::Tensor reference =
      SparseDecodeReference({values, indices}, rows);
  const auto reference_grads =
      torch::autograd::grad({reference}, {values, rows}, {upstream});
  EXPECT_TRUE(torch::allclose(fused, reference, 1e-5, 1e-5));
  EXPECT_TRUE(torch::allclose(fused_grads[0], reference_grads[0], 1e-4, 1e-5));
  EXPECT_TRUE(torch::allclose(fused_grads[1], reference_grads[1], 1e-4, 1e-5));
  // One entry by hand: sum_j values[b, j] rows[indices[b, j]].
  torch::Tensor by_hand = torch::zeros({43});
  for (int64_t j = 0; j < 6; ++j) {
    by_hand += values[2][9][j] * rows[indices[2][9][j].item<int64_t>()];
  }
  EXPECT_TRUE(torch::allclose(fused[2][9], by_hand, 1e-5, 1e-5));
}

// Both kernels' gradients against central differences in double.
TEST(SparseRowsTest, GradientsMatchFiniteDifferencesInDouble) {
  torch::manual_seed(2);
  const auto options = torch::dtype(torch::kDouble).requires_grad(true);
  const torch::Tensor indices = torch::randint(9, {12, 4}, torch::kLong);
  const torch::Tensor x = torch::randn({12, 11}, options);
  const torch::Tensor values = torch::randn({12, 4}, options);
  const torch::Tensor rows = torch::randn({9, 11}, options);
  const torch::Tensor dot_weights = torch::randn({12, 4}, torch::kDouble);
  const torch::Tensor decode_weights = torch::randn({12, 11}, torch::kDouble);
  for (const std::string& message : testing::CheckGradients(
           [&] { return (SparseDot(x, rows, indices) * dot_weights).sum(); },
           {{"x", x}, {"rows", rows}}, /*entries_per_parameter=*/20)) {
    ADD_FAILURE() << "SparseDot " << message;
  }
  for (const std::string& message : testing::CheckGradients(
           [&] {
             return (SparseDecode({values, indices}, rows) * decode_weights)
                 .sum();
           },
           {{"values", values}, {"rows", rows}},
           /*entries_per_parameter=*/20)) {
    ADD_FAILURE() << "SparseDecode " << message;
  }
}

// The float sums' order, exactly: a dot product adds into 16 partial sums
// (element i into i % 16), then whole groups of 4 into the first 4, pairs the
// four lane sets as (0 + 1) + (2 + 3), adds their lanes in order and then the
// tail; every other sum adds token by token in list order. A change of order
// (vector width, grouping, threads) changes the bits of every cpu result.
float DotInDocumentedOrder(const float* a, const float* b, int64_t n) {
  float partial[16] = {};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    for (int64_t l = 0; l < 16; ++l) partial[l] += a[i + l] * b[i + l];
  }
  for (; i + 4 <= n; i += 4) {
    for (int64_t l = 0; l < 4; ++l) partial[l] += a[i + l] * b[i + l];
  }
  float sum = 0;
  for (int64_t l = 0; l < 4; ++l) {
    sum += (partial[l] + partial[4 + l]) + (partial[8 + l] + partial[12 + l]);
  }
  for (; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

TEST(SparseRowsTest, FloatSumsAddInTheirDocumentedOrder) {
  torch::manual_seed(4);
  at::set_num_threads(2);
  const int64_t tokens = 70, k = 6, num_rows = 23, width = 37;
  const torch::Tensor x = torch::randn({tokens, width}, torch::requires_grad());
  const torch::Tensor weights =
      torch::randn({tokens, k}, torch::requires_grad());
  const torch::Tensor rows =
      torch::randn({num_rows, width}, torch::requires_grad());
  const torch::Tensor indices =
      torch::randint(num_rows, {tokens, k}, torch::kLong);
  const torch::Tensor grad_dot = torch::randn({tokens, k});
  const torch::Tensor grad_decode = torch::randn({tokens, width});
  const torch::Tensor dot = SparseDot(x, rows, indices);
  const torch::Tensor decoded = SparseDecode({weights, indices}, rows);
  const auto dot_grads = torch::autograd::grad({dot}, {x, rows}, {grad_dot});
  const auto decode_grads =
      torch::autograd::grad({decoded}, {weights, rows}, {grad_decode});

  const auto row_of = [width](const torch::Tensor& t, int64_t i) {
    return t.data_ptr<float>() + i * width;
  };
  const int64_t* index = indices.data_ptr<int64_t>();
  torch::Tensor want_dot = torch::empty({tokens, k});
  torch::Tensor want_decoded = torch::zeros({tokens, width});
  torch::Tensor want_grad_x = torch::zeros({tokens, width});
  torch::Tensor want_dot_grad_rows = torch::zeros({num_rows, width});
  torch::Tensor want_grad_weights = torch::empty({tokens, k});
  torch::Tensor want_decode_grad_rows = torch::zeros({num_rows, width});
  const float* w = weights.data_ptr<float>();
  const float* g = grad_dot.data_ptr<float>();
  for (int64_t b = 0; b < tokens; ++b) {
    for (int64_t j = 0; j < k; ++j) {
      const int64_t p = b * k + j, r = index[p];
      want_dot.data_ptr<float>()[p] =
          DotInDocumentedOrder(row_of(rows, r), row_of(x, b), width);
      want_grad_weights.data_ptr<float>()[p] =
          DotInDocumentedOrder(row_of(rows, r), row_of(grad_decode, b), width);
      for (int64_t i = 0; i < width; ++i) {
        row_of(want_decoded, b)[i] += w[p] * row_of(rows, r)[i];
        row_of(want_grad_x, b)[i] += g[p] * row_of(rows, r)[i];
        // Rows gather their tokens in increasing p, as this loop visits them.
        row_of(want_dot_grad_rows, r)[i] += g[p] * row_of(x, b)[i];
        row_of(want_decode_grad_rows, r)[i] += w[p] * row_of(grad_decode, b)[i];
      }
    }
  }
  EXPECT_TRUE(torch::equal(dot, want_dot));
  EXPECT_TRUE(torch::equal(decoded, want_decoded));
  EXPECT_TRUE(torch::equal(dot_grads[0], want_grad_x));
  EXPECT_TRUE(torch::equal(dot_grads[1], want_dot_grad_rows));
  EXPECT_TRUE(torch::equal(decode_grads[0], want_grad_weights));
  EXPECT_TRUE(torch::equal(decode_grads[1], want_decode_grad_rows));
}

// Two threads, twice: the same bits (each row's sum runs in token order
// whatever the split), and an index out of range fails with its value.
TEST(SparseRowsTest, RepeatsAreBitIdenticalAndBadIndicesFail) {
  torch::manual_seed(3);
  at::set_num_threads(2);
  const torch::Tensor x = torch::randn({513, 64}, torch::requires_grad());
  const torch::Tensor rows = torch::randn({300, 64}, torch::requires_grad());
  const torch::Tensor indices = torch::randint(300, {513, 8}, torch::kLong);
  const auto run = [&] {
    const torch::Tensor h = SparseDot(x, rows, indices);
    const torch::Tensor y = SparseDecode({h, indices}, rows);
    const auto grads = torch::autograd::grad({y.square().sum()}, {x, rows});
    return std::vector<torch::Tensor>{y, grads[0], grads[1]};
  };
  const auto first = run(), second = run();
  for (size_t i = 0; i < first.size(); ++i) {
    EXPECT_TRUE(torch::equal(first[i], second[i])) << "output " << i;
  }
  torch::Tensor bad = indices.clone();
  bad[4][2] = 300;
  EXPECT_THROW(
      {
        try {
          SparseDot(x, rows, bad);
        } catch (const c10::Error& e) {
          EXPECT_NE(std::string(e.what()).find("row index 300 out of range"),
                    std::string::npos);
          throw;
        }
      },
      c10::Error);
  EXPECT_THROW(SparseDecode({x.narrow(1, 0, 8), bad}, rows), c10::Error);
}

}  // namespace
}  // namespace sparse_layers::layers
