#include "pipelines/train/op_profile.h"

#include <ATen/record_function.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <thread>

namespace sparse_layers::train {
namespace {

const OpTime* Find(const OpProfile& profile, const std::string& name) {
  for (const OpTime& op : profile.ops) {
    if (op.name == name) return &op;
  }
  return nullptr;
}

TEST(OpProfileTest, CountsCallsAndSelfTimeOnce) {
  const torch::Tensor a = torch::randn({256, 256});
  const OpProfile profile = ProfileOps([&] {
    for (int i = 0; i < 3; ++i) torch::mm(a, a).relu();
  });
  const OpTime* mm = Find(profile, "aten::mm");
  const OpTime* relu = Find(profile, "aten::relu");
  ASSERT_NE(mm, nullptr);
  ASSERT_NE(relu, nullptr);
  EXPECT_EQ(mm->calls, 3);
  EXPECT_EQ(relu->calls, 3);
  // Self times add up to the total, and nothing is negative (children are
  // subtracted from their parent, not counted twice).
  double sum = 0;
  for (const OpTime& op : profile.ops) {
    EXPECT_GE(op.self_ms, 0) << op.name;
    sum += op.self_ms;
  }
  EXPECT_DOUBLE_EQ(sum, profile.total_ms);
  // A 256^3 matmul costs far more than a relu of its output.
  EXPECT_GT(mm->self_ms, relu->self_ms);
  EXPECT_TRUE(std::is_sorted(
      profile.ops.begin(), profile.ops.end(),
      [](const OpTime& x, const OpTime& y) { return x.self_ms > y.self_ms; }));
}

TEST(OpProfileTest, SelfTimeExcludesNestedRanges) {
  using std::chrono::milliseconds;
  const OpProfile profile = ProfileOps([] {
    RECORD_USER_SCOPE("outer");
    std::this_thread::sleep_for(milliseconds(30));
    {
      RECORD_USER_SCOPE("inner");
      std::this_thread::sleep_for(milliseconds(30));
    }
  });
  const OpTime* outer = Find(profile, "outer");
  const OpTime* inner = Find(profile, "inner");
  ASSERT_NE(outer, nullptr);
  ASSERT_NE(inner, nullptr);
  // 30 ms each, not 60 for the outer range that holds the inner one.
  EXPECT_GE(outer->self_ms, 29);
  EXPECT_LT(outer->self_ms, 50);
  EXPECT_GE(inner->self_ms, 29);
  EXPECT_LT(inner->self_ms, 50);
}

TEST(OpProfileTest, BackwardNodesWrapTheirKernels) {
  const torch::Tensor w = torch::randn({64, 64}, torch::requires_grad());
  const torch::Tensor x = torch::randn({32, 64});
  const OpProfile profile = ProfileOps([&] { x.matmul(w).sum().backward(); });
  // The backward of mm runs two mm kernels inside the MmBackward0 node, whose
  // own self time is then only its bookkeeping.
  const OpTime* node = Find(profile, "MmBackward0");
  ASSERT_NE(node, nullptr);
  EXPECT_EQ(node->calls, 1);
  const OpTime* mm = Find(profile, "aten::mm");
  ASSERT_NE(mm, nullptr);
  EXPECT_GE(mm->calls, 2);
}

}  // namespace
}  // namespace sparse_layers::train
