// Bytes of CPU tensor memory live and at peak, counted by wrapping LibTorch's
// CPU allocator: how a test or benchmark shows that a kernel never allocates
// some large tensor (e.g. the (N, V) logits), without a profiler.
#ifndef SPARSE_LAYERS_OPS_BACKEND_ALLOCATION_COUNTER_H_
#define SPARSE_LAYERS_OPS_BACKEND_ALLOCATION_COUNTER_H_

#include <cstdint>

namespace sparse_layers::backend {

// While one is alive, every CPU tensor allocation is counted (thread-safe).
// Memory allocated before it counts only from the moment it is freed (the
// live total may dip below the starting point), so measure peaks relative to
// the start: PeakBytes() - the live bytes when the window opened. One at a
// time per process; not for CUDA tensors.
class ScopedAllocationCounter {
 public:
  ScopedAllocationCounter();
  ~ScopedAllocationCounter();
  ScopedAllocationCounter(const ScopedAllocationCounter&) = delete;
  ScopedAllocationCounter& operator=(const ScopedAllocationCounter&) = delete;

  // Starts a new window: the peak becomes the bytes live now.
  void ResetPeak();
  // Bytes live now, and the most live at once since the last ResetPeak (or
  // since construction), both counted from construction.
  int64_t LiveBytes() const;
  int64_t PeakBytes() const;
  // PeakBytes() minus the bytes live at the last ResetPeak: the most memory
  // the window added on top of what it started with.
  int64_t PeakExtraBytes() const;

 private:
  int64_t window_start_ = 0;
};

}  // namespace sparse_layers::backend

#endif  // SPARSE_LAYERS_OPS_BACKEND_ALLOCATION_COUNTER_H_
