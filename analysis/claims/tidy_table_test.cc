#include "analysis/claims/tidy_table.h"

#include "gtest/gtest.h"

namespace sparse_layers::claims {
namespace {

TEST(ParseNumber, ReadsFiniteNumbers) {
  EXPECT_EQ(*ParseNumber(" -1.5e-3 ", "t.csv:2"), -1.5e-3);
  EXPECT_EQ(*ParseNumber("42", "t.csv:2"), 42.0);
}

// A table value that is not finite is an upstream failure, never data: NaN,
// inf and -inf alike fail, naming the place.
TEST(ParseNumber, RejectsWhatIsNotAFiniteNumber) {
  for (const char* cell : {"nan", "NaN", "inf", "-inf", "Infinity", "", "x"}) {
    auto value = ParseNumber(cell, "t.csv:7 column loss");
    ASSERT_FALSE(value.ok()) << cell;
    EXPECT_EQ(value.status().message(), std::string("t.csv:7 column loss: '") +
                                            cell + "' is not a finite number");
  }
}

}  // namespace
}  // namespace sparse_layers::claims
