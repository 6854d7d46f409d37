#include "ops/backend/caching_cpu_allocator.h"

#include <c10/core/CPUAllocator.h>
#include <torch/torch.h>

#include <cstdint>

#include "gtest/gtest.h"

namespace sparse_layers::backend {
namespace {

bool Aligned64(const void* data) {
  return reinterpret_cast<uintptr_t>(data) % 64 == 0;
}

TEST(CachingCpuAllocator, AFreedLargeBufferServesTheNextRequestOfItsSize) {
  CachingCpuAllocator allocator(size_t{1} << 30);
  c10::DataPtr first = allocator.allocate(size_t{3} << 20);
  void* const data = first.get();
  EXPECT_TRUE(Aligned64(data));
  first.clear();  // Back to its free list.
  EXPECT_EQ(allocator.Stats().cached_bytes, size_t{3} << 20);
  // 100 bytes less rounds up to the same 64 KiB multiple.
  c10::DataPtr second = allocator.allocate((size_t{3} << 20) - 100);
  EXPECT_EQ(second.get(), data);
  c10::DataPtr third = allocator.allocate(size_t{3} << 20);
  EXPECT_NE(third.get(), data);
  const CachingCpuAllocatorStats stats = allocator.Stats();
  EXPECT_EQ(stats.reused, 1);
  EXPECT_EQ(stats.fresh, 2);
  EXPECT_EQ(stats.cached_bytes, 0u);
}

TEST(CachingCpuAllocator, SmallBuffersAreNotCachedAndTheCapacityHolds) {
  CachingCpuAllocator allocator(size_t{1} << 20);
  c10::DataPtr small = allocator.allocate(1000);
  EXPECT_TRUE(Aligned64(small.get()));
  small.clear();
  EXPECT_EQ(allocator.Stats().cached_bytes, 0u);
  c10::DataPtr a = allocator.allocate(size_t{1} << 20);
  c10::DataPtr b = allocator.allocate(size_t{1} << 20);
  a.clear();
  b.clear();  // The lists already hold their 1 MiB: freed, not kept.
  EXPECT_EQ(allocator.Stats().cached_bytes, size_t{1} << 20);
  EXPECT_EQ(allocator.Stats().fresh, 2);
}

TEST(CachingCpuAllocator, RawAllocateAndDeallocateTakeBothPaths) {
  CachingCpuAllocator allocator(size_t{1} << 30);
  void* large = allocator.raw_allocate(size_t{1} << 20);
  void* small = allocator.raw_allocate(64);
  allocator.raw_deallocate(small);
  allocator.raw_deallocate(large);
  EXPECT_EQ(allocator.Stats().cached_bytes, size_t{1} << 20);
  void* again = allocator.raw_allocate(size_t{1} << 20);
  EXPECT_EQ(again, large);
  allocator.raw_deallocate(again);
}

TEST(CachingCpuAllocator, InstalledItServesLibTorchAndItsResultsAreUnchanged) {
  torch::manual_seed(0);
  const torch::Tensor a = torch::randn({512, 384});
  const torch::Tensor b = torch::randn({384, 640});
  const torch::Tensor before = torch::mm(a, b);
  UseCachingCpuAllocator();
  UseCachingCpuAllocator();  // A second call changes nothing.
  const auto* installed =
      dynamic_cast<const CachingCpuAllocator*>(c10::GetCPUAllocator());
  ASSERT_NE(installed, nullptr);
  const int64_t reused = installed->Stats().reused;
  {
    const torch::Tensor product = torch::mm(a, b);  // 1.25 MiB
    EXPECT_TRUE(torch::equal(product, before));
  }
  const torch::Tensor again = torch::mm(a, b);
  EXPECT_EQ(installed->Stats().reused, reused + 1);
  EXPECT_TRUE(torch::equal(again, before));
}

}  // namespace
}  // namespace sparse_layers::backend
