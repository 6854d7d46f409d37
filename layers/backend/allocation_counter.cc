#include "layers/backend/allocation_counter.h"

#include <atomic>

#include "c10/core/Allocator.h"
#include "c10/core/CPUAllocator.h"
#include "c10/util/Exception.h"

namespace sparse_layers::backend {
namespace {

std::atomic<int64_t> live_bytes{0};
std::atomic<int64_t> peak_bytes{0};
std::atomic<bool> counting{false};

// The wrapped allocation and its size, so the deleter can uncount it.
struct Counted {
  c10::DataPtr inner;
  int64_t bytes;
};

void DeleteCounted(void* context) {
  auto* counted = static_cast<Counted*>(context);
  live_bytes.fetch_sub(counted->bytes);
  delete counted;  // Frees through the wrapped allocator's own deleter.
}

// Forwards to the allocator it replaced; lives for the whole process, since
// tensors it made may outlive the counter.
class CountingAllocator : public c10::Allocator {
 public:
  explicit CountingAllocator(c10::Allocator* base) : base_(base) {}

  c10::DataPtr allocate(size_t n) const override {
    c10::DataPtr inner = base_->allocate(n);
    if (!counting.load()) return inner;
    void* data = inner.get();
    const c10::Device device = inner.device();
    const int64_t bytes = static_cast<int64_t>(n);
    const int64_t now = live_bytes.fetch_add(bytes) + bytes;
    // Lock-free max: retry while another thread has not already gone higher.
    int64_t peak = peak_bytes.load();
    while (now > peak && !peak_bytes.compare_exchange_weak(peak, now)) {
    }
    return {data, new Counted{std::move(inner), bytes}, &DeleteCounted, device};
  }

  c10::Allocator* base() const { return base_; }

 private:
  c10::Allocator* base_;
};

// Installed once at the highest priority, then switched on and off.
CountingAllocator* Installed() {
  static CountingAllocator* allocator = [] {
    auto* counting_allocator = new CountingAllocator(c10::GetCPUAllocator());
    c10::SetCPUAllocator(counting_allocator, /*priority=*/255);
    return counting_allocator;
  }();
  return allocator;
}

}  // namespace

ScopedAllocationCounter::ScopedAllocationCounter() {
  Installed();
  TORCH_CHECK(!counting.exchange(true),
              "one ScopedAllocationCounter at a time");
  live_bytes = 0;
  peak_bytes = 0;
}

ScopedAllocationCounter::~ScopedAllocationCounter() { counting = false; }

void ScopedAllocationCounter::ResetPeak() {
  window_start_ = live_bytes.load();
  peak_bytes = window_start_;
}

int64_t ScopedAllocationCounter::LiveBytes() const { return live_bytes.load(); }

int64_t ScopedAllocationCounter::PeakBytes() const { return peak_bytes.load(); }

int64_t ScopedAllocationCounter::PeakExtraBytes() const {
  return peak_bytes.load() - window_start_;
}

}  // namespace sparse_layers::backend
