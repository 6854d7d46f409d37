#include "ops/backend/allocation_counter.h"

#include <atomic>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "c10/core/Allocator.h"
#include "c10/core/CPUAllocator.h"
#include "c10/util/Exception.h"

namespace sparse_layers::backend {
namespace {

std::atomic<int64_t> live_bytes{0};
std::atomic<int64_t> peak_bytes{0};
std::atomic<bool> counting{false};

// Each counted allocation's size and its wrapped allocator's deleter, by data
// pointer: the counted DataPtr keeps context == data, as raw_allocate (used by
// some ATen kernels) requires.
struct Counted {
  int64_t bytes;
  c10::DeleterFnPtr deleter;
};
std::mutex counted_mutex;
std::unordered_map<void*, Counted>& CountedAllocations() {
  static auto* counted = new std::unordered_map<void*, Counted>();
  return *counted;
}

// Removes `data` from the counted allocations and uncounts it; nullopt when
// the counter did not make it.
std::optional<Counted> TakeCounted(void* data) {
  std::lock_guard<std::mutex> lock(counted_mutex);
  auto it = CountedAllocations().find(data);
  if (it == CountedAllocations().end()) return std::nullopt;
  const Counted counted = it->second;
  CountedAllocations().erase(it);
  live_bytes.fetch_sub(counted.bytes);
  return counted;
}

void DeleteCounted(void* data) {
  const std::optional<Counted> counted = TakeCounted(data);
  TORCH_CHECK(counted.has_value(),
              "freeing an allocation the counter did not make");
  counted->deleter(data);
}

c10::DeleterFnPtr base_raw_deleter = nullptr;

// raw_allocate's allocations, counted or not.
void RawDelete(void* data) {
  const std::optional<Counted> counted = TakeCounted(data);
  (counted ? counted->deleter : base_raw_deleter)(data);
}

// Forwards to the allocator it replaced; lives for the whole process, since
// tensors it made may outlive the counter.
class CountingAllocator : public c10::Allocator {
 public:
  explicit CountingAllocator(c10::Allocator* base) : base_(base) {}

  c10::DataPtr allocate(size_t n) const override {
    c10::DataPtr inner = base_->allocate(n);
    if (!counting.load() || inner.get() == nullptr) return inner;
    // The default CPU allocator's DataPtr is its own context.
    TORCH_CHECK(
        inner.get() == inner.get_context(),
        "the wrapped CPU allocator keeps a context apart from its data");
    const c10::DeleterFnPtr deleter = inner.get_deleter();
    const c10::Device device = inner.device();
    void* data = inner.release_context();
    const int64_t bytes = static_cast<int64_t>(n);
    {
      std::lock_guard<std::mutex> lock(counted_mutex);
      CountedAllocations()[data] = {bytes, deleter};
    }
    const int64_t now = live_bytes.fetch_add(bytes) + bytes;
    // Lock-free max: retry while another thread has not already gone higher.
    int64_t peak = peak_bytes.load();
    while (now > peak && !peak_bytes.compare_exchange_weak(peak, now)) {
    }
    return {data, data, &DeleteCounted, device};
  }

  // raw_allocate's allocations, counted or not, are freed through this; an
  // uncounted one goes to the wrapped allocator's own deleter.
  c10::DeleterFnPtr raw_deleter() const override { return &RawDelete; }

  c10::Allocator* base() const { return base_; }

 private:
  c10::Allocator* base_;
};

// Installed once at the highest priority, then switched on and off.
CountingAllocator* Installed() {
  static CountingAllocator* allocator = [] {
    base_raw_deleter = c10::GetCPUAllocator()->raw_deleter();
    TORCH_CHECK(base_raw_deleter != nullptr,
                "the CPU allocator has no raw deleter to wrap");
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
