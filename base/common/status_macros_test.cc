#include "base/common/status_macros.h"

#include <memory>
#include <string>

#include "gtest/gtest.h"

namespace sparse_layers {
namespace {

absl::Status Fails(int* calls) {
  ++*calls;
  return absl::NotFoundError("missing");
}

absl::Status ReturnsEarly(int* calls) {
  RETURN_IF_ERROR(absl::OkStatus());
  RETURN_IF_ERROR(Fails(calls));
  RETURN_IF_ERROR(Fails(calls));  // Not reached.
  return absl::OkStatus();
}

TEST(StatusMacrosTest, ReturnIfErrorStopsAtTheFirstError) {
  int calls = 0;
  EXPECT_EQ(ReturnsEarly(&calls), absl::NotFoundError("missing"));
  EXPECT_EQ(calls, 1);
}

absl::StatusOr<std::unique_ptr<int>> MoveOnly(bool ok) {
  if (!ok) return absl::InvalidArgumentError("bad");
  return std::make_unique<int>(7);
}

absl::StatusOr<int> Sum(bool first_ok, bool second_ok) {
  ASSIGN_OR_RETURN(std::unique_ptr<int> first, MoveOnly(first_ok));
  ASSIGN_OR_RETURN(auto second, MoveOnly(second_ok));  // Two on one scope.
  return *first + *second;
}

TEST(StatusMacrosTest, AssignOrReturnAssignsOrPropagates) {
  EXPECT_EQ(*Sum(true, true), 14);
  EXPECT_EQ(Sum(false, true).status(), absl::InvalidArgumentError("bad"));
  EXPECT_EQ(Sum(true, false).status(), absl::InvalidArgumentError("bad"));
}

}  // namespace
}  // namespace sparse_layers
