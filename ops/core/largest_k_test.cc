#include "ops/core/largest_k.h"

#include <torch/torch.h>

#include <limits>

#include "gtest/gtest.h"

namespace sparse_layers::layers {
namespace {

// Equal bits (NaN included, which torch::equal calls unequal to itself).
bool SameBits(const torch::Tensor& a, const torch::Tensor& b) {
  const auto as_int =
      a.scalar_type() == torch::kFloat ? torch::kInt : torch::kLong;
  return torch::equal(a.contiguous().view(as_int), b.contiguous().view(as_int));
}

// LargestK against torch::topk itself, bit for bit; returns the rows it left
// to ATen.
int64_t ExpectSameAsTopK(const torch::Tensor& x, int64_t k, bool sorted) {
  int64_t aten_rows = -1;
  const auto [values, indices] = LargestK(x, k, sorted, &aten_rows);
  const auto [expected_values, expected_indices] =
      x.topk(k, -1, /*largest=*/true, sorted);
  EXPECT_TRUE(SameBits(values, expected_values));
  EXPECT_TRUE(torch::equal(indices, expected_indices));
  return aten_rows;
}

// Wide rows of distinct values (the replacement fits' pre-codes): every row
// is ranked by the pass itself, and matches ATen's partial sort.
TEST(LargestKTest, DistinctRowsAreRankedWithoutATen) {
  torch::manual_seed(0);
  for (const int64_t k : {1, 4, 8, 16, 32}) {
    for (const int64_t n : {64 * k, 64 * k + 3, int64_t{4096}}) {
      for (const bool sorted : {false, true}) {
        SCOPED_TRACE(::testing::Message()
                     << "k " << k << ", n " << n << ", sorted " << sorted);
        EXPECT_EQ(ExpectSameAsTopK(torch::randn({37, n}), k, sorted), 0);
      }
    }
  }
  // Sorted answers are fixed for short rows too (ATen's nth_element branch).
  EXPECT_EQ(ExpectSameAsTopK(torch::randn({50, 256}), 16, true), 0);
}

// Ties decide ATen's answer (which of the equal entries, and their order), so
// those rows go to ATen: ReLU zeros where fewer than k are positive, integer
// scores, signed zeros, NaN (which ATen ranks first).
TEST(LargestKTest, RowsWithTiesOrNaNAreATens) {
  torch::manual_seed(1);
  torch::Tensor relu = torch::relu(torch::randn({64, 1024}) - 2.5);
  EXPECT_GT(ExpectSameAsTopK(relu, 8, false), 0);
  EXPECT_GT(ExpectSameAsTopK(torch::randint(0, 50, {64, 1024}, torch::kFloat),
                             8, false),
            0);
  torch::Tensor special = torch::randn({6, 1024});
  special[0][700] = std::numeric_limits<float>::quiet_NaN();
  special[1][3] = std::numeric_limits<float>::quiet_NaN();
  special[2][5] = std::numeric_limits<float>::infinity();
  special[2][900] = std::numeric_limits<float>::infinity();
  special[3][10] = 10.0f;
  special[3][1000] = 10.0f;
  special[4].fill_(0.0f);
  special[4][20] = -0.0f;
  special[5][17] = -std::numeric_limits<float>::infinity();
  EXPECT_EQ(ExpectSameAsTopK(special, 8, false), 5);
  EXPECT_EQ(ExpectSameAsTopK(special, 8, true), 5);
}

TEST(LargestKTest, LayoutsAndUncoveredInputs) {
  torch::manual_seed(2);
  // A strided view, and leading dimensions.
  ExpectSameAsTopK(torch::randn({1024, 40}).t(), 8, false);
  ExpectSameAsTopK(torch::randn({3, 5, 600}), 8, false);
  // Not covered, answered by ATen: double, k > 32, unsorted short rows.
  EXPECT_EQ(ExpectSameAsTopK(torch::randn({4, 4096}, torch::kDouble), 8, false),
            4);
  EXPECT_EQ(ExpectSameAsTopK(torch::randn({4, 4096}), 40, true), 4);
  EXPECT_EQ(ExpectSameAsTopK(torch::randn({4, 256}), 8, false), 4);
}

}  // namespace
}  // namespace sparse_layers::layers
