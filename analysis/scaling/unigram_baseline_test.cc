#include "analysis/scaling/unigram_baseline.h"

#include <cmath>
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace sparse_layers::analysis {

using datasets::TokenIds;
namespace {

TEST(UnigramBaseline, AddOneSmoothedCrossEntropyByHand) {
  // Training counts {1, 0, 1}: p = {2/5, 1/5, 2/5}; validation tokens 0 and 1.
  auto ce = UnigramCrossEntropy({1, 0, 1}, {1, 1, 0});
  ASSERT_TRUE(ce.ok()) << ce.status();
  EXPECT_NEAR(*ce, -(std::log(0.4) + std::log(0.2)) / 2, 1e-12);
  // Smoothed frequencies 900/1001, 100/1001 and 1/1001, close to the
  // validation split's 0.9 and 0.1: near its entropy, well below log V.
  auto matched = UnigramCrossEntropy({899, 99, 0}, {90, 10, 0});
  ASSERT_TRUE(matched.ok());
  EXPECT_NEAR(*matched,
              -(0.9 * std::log(900.0 / 1001) + 0.1 * std::log(100.0 / 1001)),
              1e-12);
  EXPECT_LT(*matched, std::log(3.0));
}

TEST(UnigramBaseline, CountsEveryShardAndRejectsIdsOutsideTheVocabulary) {
  const std::vector<uint16_t> a = {0, 2, 2};
  const std::vector<uint32_t> b = {1, 2};
  auto counts = TokenCounts(
      {TokenIds(a.data(), a.size(), 2), TokenIds(b.data(), b.size(), 4)}, 3);
  ASSERT_TRUE(counts.ok()) << counts.status();
  EXPECT_EQ(*counts, (std::vector<int64_t>{1, 1, 3}));
  EXPECT_FALSE(TokenCounts({TokenIds(a.data(), a.size(), 2)}, 2).ok());
}

TEST(UnigramBaseline, MismatchedOrEmptySplitsAreErrors) {
  EXPECT_FALSE(UnigramCrossEntropy({1, 1}, {1, 1, 1}).ok());
  EXPECT_FALSE(UnigramCrossEntropy({1, 1}, {0, 0}).ok());
}

}  // namespace
}  // namespace sparse_layers::analysis
