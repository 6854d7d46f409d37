#include "ops/backend/caching_cpu_allocator.h"

#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/alloc_cpu.h>

#include <mutex>
#include <unordered_map>
#include <vector>

namespace sparse_layers::backend {

struct CpuBufferPool {
  std::mutex mutex;
  std::unordered_map<size_t, std::vector<void*>> free_by_size;
  CachingCpuAllocatorStats stats;
};

namespace {

constexpr size_t kGranule = size_t{64} << 10;

size_t RoundUp(size_t n) { return (n + kGranule - 1) / kGranule * kGranule; }

struct LiveBlock {
  CpuBufferPool* pool;
  size_t size;
};

// Large buffers handed out and not yet freed, by data pointer: the deleter is
// a plain function of the pointer (c10's DataPtr and raw_deallocate), so it
// finds its pool and size here.
std::mutex& LiveMutex() {
  static auto* mutex = new std::mutex;
  return *mutex;
}

std::unordered_map<void*, LiveBlock>& Live() {
  static auto* live = new std::unordered_map<void*, LiveBlock>;
  return *live;
}

void Release(void* data) {
  if (data == nullptr) return;
  LiveBlock block{nullptr, 0};
  {
    std::lock_guard<std::mutex> lock(LiveMutex());
    auto it = Live().find(data);
    if (it != Live().end()) {
      block = it->second;
      Live().erase(it);
    }
  }
  if (block.pool == nullptr) {
    c10::free_cpu(data);  // A small buffer, straight from c10.
    return;
  }
  CpuBufferPool& pool = *block.pool;
  {
    std::lock_guard<std::mutex> lock(pool.mutex);
    if (pool.stats.cached_bytes + block.size <= pool.stats.capacity_bytes) {
      pool.free_by_size[block.size].push_back(data);
      pool.stats.cached_bytes += block.size;
      return;
    }
  }
  c10::free_cpu(data);
}

}  // namespace

CachingCpuAllocator::CachingCpuAllocator(size_t capacity_bytes)
    : pool_(new CpuBufferPool) {
  pool_->stats.capacity_bytes = capacity_bytes;
}

CachingCpuAllocator::~CachingCpuAllocator() {
  for (auto& [size, blocks] : pool_->free_by_size) {
    for (void* data : blocks) c10::free_cpu(data);
  }
  delete pool_;
}

c10::DataPtr CachingCpuAllocator::allocate(size_t n) const {
  const c10::Device cpu(c10::DeviceType::CPU);
  if (n < kMinCachedBytes) {
    // c10's own deleter: freeing a small buffer takes no lock or lookup (only
    // raw_deallocate, which has no DataPtr, goes through Release for both).
    void* data = c10::alloc_cpu(n);
    return {data, data, &c10::free_cpu, cpu};
  }
  const size_t size = RoundUp(n);
  void* data = nullptr;
  {
    std::lock_guard<std::mutex> lock(pool_->mutex);
    auto it = pool_->free_by_size.find(size);
    if (it != pool_->free_by_size.end() && !it->second.empty()) {
      data = it->second.back();
      it->second.pop_back();
      pool_->stats.cached_bytes -= size;
      ++pool_->stats.reused;
    } else {
      ++pool_->stats.fresh;
    }
  }
  if (data == nullptr) data = c10::alloc_cpu(size);
  {
    std::lock_guard<std::mutex> lock(LiveMutex());
    Live()[data] = {pool_, size};
  }
  return {data, data, &Release, cpu};
}

c10::DeleterFnPtr CachingCpuAllocator::raw_deleter() const { return &Release; }

CachingCpuAllocatorStats CachingCpuAllocator::Stats() const {
  std::lock_guard<std::mutex> lock(pool_->mutex);
  return pool_->stats;
}

void UseCachingCpuAllocator() {
  static const bool installed = [] {
    // Never destroyed: buffers may be freed during static destruction.
    c10::SetCPUAllocator(new CachingCpuAllocator(size_t{4} << 30),
                         /*priority=*/1);
    return true;
  }();
  (void)installed;
}

}  // namespace sparse_layers::backend
