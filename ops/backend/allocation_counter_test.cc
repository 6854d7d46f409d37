#include "ops/backend/allocation_counter.h"

#include <torch/torch.h>

#include "c10/core/CPUAllocator.h"
#include "gtest/gtest.h"

namespace sparse_layers::backend {
namespace {

TEST(ScopedAllocationCounterTest, CountsLiveAndPeakBytesOfCpuTensors) {
  const torch::Tensor before = torch::zeros({1000});  // Not counted.
  ScopedAllocationCounter counter;
  counter.ResetPeak();
  {
    const torch::Tensor a = torch::empty({1024, 256});  // 1 MiB of float.
    EXPECT_EQ(counter.LiveBytes(), 1 << 20);
    const torch::Tensor b = torch::empty({256}, torch::kDouble);  // 2 KiB.
    EXPECT_EQ(counter.LiveBytes(), (1 << 20) + 2048);
  }
  EXPECT_EQ(counter.LiveBytes(), 0);
  EXPECT_EQ(counter.PeakExtraBytes(), (1 << 20) + 2048);
  // A new window forgets the old peak; freeing uncounted memory changes
  // nothing.
  counter.ResetPeak();
  { const torch::Tensor c = torch::empty({100}); }
  EXPECT_EQ(counter.PeakExtraBytes(), 400);
  EXPECT_EQ(before.size(0), 1000);
}

// The raw interface some ATen kernels use for scratch memory: counted while
// counting, and freed through the allocator's raw deleter whether or not it
// was counted (the count had broken it: "dptr.get() == dptr.get_context()").
TEST(ScopedAllocationCounterTest, RawAllocationsAreCountedAndFreed) {
  ScopedAllocationCounter counter;
  c10::Allocator* allocator = c10::GetCPUAllocator();
  void* counted = allocator->raw_allocate(4096);
  EXPECT_EQ(counter.LiveBytes(), 4096);
  allocator->raw_deallocate(counted);
  EXPECT_EQ(counter.LiveBytes(), 0);
  EXPECT_EQ(counter.PeakExtraBytes(), 4096);
}

TEST(ScopedAllocationCounterTest, RawAllocationsOutsideTheCountAreFreed) {
  void* before = nullptr;
  {
    ScopedAllocationCounter counter;  // Installs the counting allocator.
  }
  before = c10::GetCPUAllocator()->raw_allocate(1024);
  ScopedAllocationCounter counter;
  c10::GetCPUAllocator()->raw_deallocate(before);
  EXPECT_EQ(counter.LiveBytes(), 0);
}

}  // namespace
}  // namespace sparse_layers::backend
