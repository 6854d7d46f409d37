#include "datasets/text/held_out_windows.h"

#include "datasets/text/test_token_split.h"
#include "gtest/gtest.h"

namespace sparse_layers::datasets {
namespace {

TEST(HeldOutWindowsTest, FirstWindowsCappedBySplitLength) {
  auto split = RandomTokenSplit("windows", "validation", 50, 100, 1);
  ASSERT_NE(split, nullptr);
  auto three = ReadHeldOutWindows(*split, 3, 16);
  ASSERT_TRUE(three.ok()) << three.status();
  EXPECT_EQ(three->count, 3);
  EXPECT_EQ(three->ids.size(), 48u);
  // 100 tokens hold fewer than 50 windows of 16: the count shrinks to fit.
  auto many = ReadHeldOutWindows(*split, 50, 16);
  ASSERT_TRUE(many.ok()) << many.status();
  EXPECT_LT(many->count, 50);
  EXPECT_GE(many->count, 3);
  // The same windows on every read (the evaluation order, no draws).
  auto again = ReadHeldOutWindows(*split, 3, 16);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->ids, three->ids);
  EXPECT_FALSE(ReadHeldOutWindows(*split, 1, 500).ok());
}

}  // namespace
}  // namespace sparse_layers::datasets
