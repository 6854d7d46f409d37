// LibTorch's CPU allocator with large buffers kept for reuse.
//
// c10's default CPU allocator takes every buffer from posix_memalign, and
// glibc serves a large aligned request from fresh pages each time (it never
// reuses the freed region for it), so each large tensor of a training step
// pays the kernel's page faults again: about 0.5 ms per MB on our 2-core VMs,
// some 33,000 faults a step of the dense benchmark LM. A training loop asks
// for the same sizes step after step, so here a freed buffer of at least
// kMinCachedBytes goes to a free list by size and the next request of that
// size takes it back (as LibTorch's CUDA caching allocator does). Tensors'
// contents are unaffected: torch::empty promises no values either way.
#ifndef SPARSE_LAYERS_OPS_BACKEND_CACHING_CPU_ALLOCATOR_H_
#define SPARSE_LAYERS_OPS_BACKEND_CACHING_CPU_ALLOCATOR_H_

#include <c10/core/Allocator.h>

#include <cstddef>
#include <cstdint>

namespace sparse_layers::backend {

// Buffers below this go straight to c10's allocator (glibc reuses them).
inline constexpr size_t kMinCachedBytes = size_t{128} << 10;

struct CachingCpuAllocatorStats {
  int64_t reused = 0;         // large requests served from a free list
  int64_t fresh = 0;          // large requests that allocated
  size_t cached_bytes = 0;    // held in free lists now
  size_t capacity_bytes = 0;  // the most the free lists keep
};

// The free lists and counts behind one CachingCpuAllocator.
struct CpuBufferPool;

// Large requests are rounded up to 64 KiB and served from free lists by that
// size; freed buffers return to their list unless the lists already hold
// capacity_bytes, in which case they are freed. Thread-safe.
class CachingCpuAllocator final : public c10::Allocator {
 public:
  explicit CachingCpuAllocator(size_t capacity_bytes);
  ~CachingCpuAllocator() override;

  c10::DataPtr allocate(size_t n) const override;
  c10::DeleterFnPtr raw_deleter() const override;

  CachingCpuAllocatorStats Stats() const;

 private:
  // Owned. Buffers must be freed before the allocator is destroyed.
  CpuBufferPool* pool_;
};

// Makes a CachingCpuAllocator (capacity 4 GiB) LibTorch's CPU allocator for
// the rest of the process; later calls do nothing. Every main calls it
// through InitMain (ops/backend/torch_init.h).
void UseCachingCpuAllocator();

}  // namespace sparse_layers::backend

#endif  // SPARSE_LAYERS_OPS_BACKEND_CACHING_CPU_ALLOCATOR_H_
