#include "layers/ffn/product_key_topk.h"

#include <torch/torch.h>

#include <algorithm>
#include <limits>
#include <numeric>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "ops/testing/gradient_check.h"

namespace sparse_layers::layers {
namespace {

TEST(ProductKeyTopKTest, EqualsBruteForceTopKOverAllPairs) {
  torch::manual_seed(0);
  const torch::Tensor s1 = torch::randn({50, 3, 12});
  const torch::Tensor s2 = torch::randn({50, 3, 12});
  const ProductTopK fast = ProductKeyTopKOfHalves(torch::stack({s1, s2}, 1), 5);
  // All n^2 sums, index i * n + j, best first as topk gives them.
  const torch::Tensor all =
      (s1.unsqueeze(-1) + s2.unsqueeze(-2)).reshape({50, 3, 144});
  const auto [values, indices] = all.topk(5, -1);
  EXPECT_TRUE(torch::equal(fast.scores, values));
  EXPECT_TRUE(torch::equal(fast.indices, indices));
}

// The routers' layout: halves (N, 2, C, n) as a strided view.
torch::Tensor RouterScores(torch::Dtype dtype) {
  torch::manual_seed(1);
  return torch::randn({40, 6 * 16}, torch::TensorOptions().dtype(dtype))
      .view({40, 2, 3, 16})
      .requires_grad_();
}

TEST(ProductKeyTopKTest, EqualsTheReferenceBitForBitWithGradients) {
  const torch::Tensor s = RouterScores(torch::kFloat);
  const torch::Tensor weights = torch::randn({40, 3, 4});
  const ProductTopK fused = ProductKeyTopKOfHalves(s, 4);
  const ProductTopK reference =
      ProductKeyTopKReference(s.select(1, 0), s.select(1, 1), 4);
  EXPECT_TRUE(torch::equal(fused.scores, reference.scores));
  EXPECT_TRUE(torch::equal(fused.indices, reference.indices));
  const torch::Tensor grad_fused =
      torch::autograd::grad({(fused.scores * weights).sum()}, {s})[0];
  const torch::Tensor grad_reference =
      torch::autograd::grad({(reference.scores * weights).sum()}, {s})[0];
  EXPECT_TRUE(torch::equal(grad_fused, grad_reference))
      << (grad_fused - grad_reference).abs().max().item<float>();
  // Each result's gradient reaches exactly two half-scores.
  EXPECT_LE(grad_fused.ne(0).sum().item<int64_t>(), 2 * 40 * 3 * 4);
}

TEST(ProductKeyTopKTest, GradientsMatchFiniteDifferences) {
  // Small rows (k = 3 of n = 5), so most entries of both halves are chosen.
  torch::manual_seed(2);
  const auto options = torch::TensorOptions().dtype(torch::kDouble);
  const torch::Tensor s = torch::randn({3, 2, 2, 5}, options).requires_grad_();
  const torch::Tensor weights = torch::randn({3, 2, 3}, options);
  const auto messages = testing::CheckGradients(
      [&] { return (ProductKeyTopKOfHalves(s, 3).scores * weights).sum(); },
      {{"halves", s}}, /*entries_per_parameter=*/40);
  for (const std::string& message : messages) ADD_FAILURE() << message;
}

TEST(ProductKeyTopKTest, RepeatsAreBitIdenticalAndStridesAreRead) {
  const torch::Tensor s = RouterScores(torch::kFloat);
  const ProductTopK first = ProductKeyTopKOfHalves(s, 4);
  const ProductTopK second = ProductKeyTopKOfHalves(s, 4);
  EXPECT_TRUE(torch::equal(first.scores, second.scores));
  EXPECT_TRUE(torch::equal(first.indices, second.indices));
  // A permuted copy laid out (2, N, C, n) gives the same selection.
  const torch::Tensor other_layout =
      s.detach().permute({1, 0, 2, 3}).contiguous().permute({1, 0, 2, 3});
  const ProductTopK strided = ProductKeyTopKOfHalves(other_layout, 4);
  EXPECT_TRUE(torch::equal(first.scores, strided.scores));
  EXPECT_TRUE(torch::equal(first.indices, strided.indices));
}

// PEER's router hands the top-k a permuted view; its gradient comes back in
// that layout (so the view passes it on without a copy) and equals the
// contiguous input's.
TEST(ProductKeyTopKTest, GradientKeepsTheInputLayout) {
  const torch::Tensor s = RouterScores(torch::kFloat);
  const torch::Tensor weights = torch::randn({40, 3, 4});
  const torch::Tensor base =
      s.detach().permute({1, 2, 0, 3}).contiguous().requires_grad_();
  const torch::Tensor permuted = base.permute({2, 0, 1, 3});  // (N, 2, C, n)
  const torch::Tensor grad_contiguous = torch::autograd::grad(
      {(ProductKeyTopKOfHalves(s, 4).scores * weights).sum()}, {s})[0];
  const torch::Tensor grad_permuted = torch::autograd::grad(
      {(ProductKeyTopKOfHalves(permuted, 4).scores * weights).sum()},
      {base})[0];
  EXPECT_TRUE(grad_permuted.is_contiguous());
  EXPECT_TRUE(
      torch::equal(grad_permuted.permute({2, 0, 1, 3}), grad_contiguous));
}

// The documented order by brute force: each half's k best by (score
// descending, position ascending), then the k best of their k^2 sums by (sum
// descending, a-major pair order).
template <typename T>
ProductTopK DocumentedOrder(const torch::Tensor& halves, int64_t k) {
  const int64_t tokens = halves.size(0), channels = halves.size(2),
                n = halves.size(3);
  const torch::Tensor h = halves.contiguous();
  torch::Tensor scores = torch::empty({tokens, channels, k}, h.options());
  torch::Tensor indices =
      torch::empty({tokens, channels, k}, h.options().dtype(torch::kLong));
  const auto best_of = [&](const T* v) {
    std::vector<int64_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t b) { return v[a] > v[b]; });
    order.resize(k);
    return order;
  };
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t c = 0; c < channels; ++c) {
      const T* s1 = h[t][0][c].template data_ptr<T>();
      const T* s2 = h[t][1][c].template data_ptr<T>();
      const std::vector<int64_t> best1 = best_of(s1), best2 = best_of(s2);
      std::vector<std::pair<T, int64_t>> sums;  // (sum, i * n + j)
      for (int64_t a = 0; a < k; ++a) {
        for (int64_t b = 0; b < k; ++b) {
          sums.push_back(
              {s1[best1[a]] + s2[best2[b]], best1[a] * n + best2[b]});
        }
      }
      std::stable_sort(
          sums.begin(), sums.end(),
          [](const auto& x, const auto& y) { return x.first > y.first; });
      for (int64_t o = 0; o < k; ++o) {
        scores[t][c][o] = sums[o].first;
        indices[t][c][o] = sums[o].second;
      }
    }
  }
  return {scores, indices};
}

// Float rows with k = 8 take the branch-free path, the others the scalar one;
// both must rank exactly as documented, ties included (scores drawn from 7
// integers tie in almost every row), at row widths around the vector path's
// edges, with -inf scores in some rows.
TEST(ProductKeyTopKTest, BothPathsRankInTheDocumentedOrder) {
  torch::manual_seed(3);
  for (const int64_t n : {8, 9, 16, 40, 80}) {
    for (const bool ties : {false, true}) {
      torch::Tensor halves =
          ties ? torch::randint(-3, 4, {64, 2, 3, n}, torch::kFloat)
               : torch::randn({64, 2, 3, n});
      halves[5][0][1].fill_(-std::numeric_limits<float>::infinity());
      halves[6][1][2]
          .slice(0, 0, n - 3)
          .fill_(-std::numeric_limits<float>::infinity());
      for (const int64_t k : {8, 4}) {
        SCOPED_TRACE(::testing::Message()
                     << "n " << n << ", ties " << ties << ", k " << k);
        const ProductTopK expected = DocumentedOrder<float>(halves, k);
        const ProductTopK fused = ProductKeyTopKOfHalves(halves, k);
        EXPECT_TRUE(torch::equal(fused.scores, expected.scores));
        EXPECT_TRUE(torch::equal(fused.indices, expected.indices));
      }
      const torch::Tensor doubles = halves.to(torch::kDouble);
      const ProductTopK expected = DocumentedOrder<double>(doubles, 8);
      const ProductTopK fused = ProductKeyTopKOfHalves(doubles, 8);
      EXPECT_TRUE(torch::equal(fused.scores, expected.scores));
      EXPECT_TRUE(torch::equal(fused.indices, expected.indices));
    }
  }
}

// NaN scores, and NaN sums (+inf + -inf), have no documented rank: such rows
// take the scalar path in float too, so float (k = 8) and double (always
// scalar) agree on integer scores, whose sums are exact in both.
TEST(ProductKeyTopKTest, RowsWithNaNTakeTheScalarPath) {
  torch::manual_seed(4);
  torch::Tensor halves = torch::randint(-20, 21, {16, 2, 2, 40}, torch::kFloat);
  const float nan = std::numeric_limits<float>::quiet_NaN(),
              inf = std::numeric_limits<float>::infinity();
  halves[0][0][0][3] = nan;
  halves[1][1][1][39] = nan;
  halves[2][0][1][0] = inf;
  halves[2][1][1][5] = -inf;
  halves[3][0][0][7] = inf;
  halves[3][1][0].fill_(-inf);
  const ProductTopK fused = ProductKeyTopKOfHalves(halves, 8);
  const ProductTopK scalar =
      ProductKeyTopKOfHalves(halves.to(torch::kDouble), 8);
  EXPECT_TRUE(torch::equal(fused.indices, scalar.indices));
  const torch::Tensor scalar_scores = scalar.scores.to(torch::kFloat);
  EXPECT_TRUE(torch::equal(fused.scores.isnan(), scalar_scores.isnan()));
  EXPECT_TRUE(torch::equal(fused.scores.nan_to_num(0, inf, -inf),
                           scalar_scores.nan_to_num(0, inf, -inf)));
}

TEST(ProductKeyTopKTest, RefusesBadShapes) {
  EXPECT_ANY_THROW(ProductKeyTopKOfHalves(torch::randn({4, 3, 2, 8}), 2));
  EXPECT_ANY_THROW(ProductKeyTopKOfHalves(torch::randn({4, 2, 2, 8}), 9));
}

}  // namespace
}  // namespace sparse_layers::layers
