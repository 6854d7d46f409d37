// Bazel 4 cannot reserve several cores for one build action (resource_set and
// "resources:cpu" came in later versions), so multi-threaded actions take one
// of floor(cores / threads) slot locks (flock) before computing: two 2-thread
// trainings never share 2 cores. The lock is released when the process exits.
#ifndef SPARSE_LAYERS_BASE_COMMON_CPU_SLOTS_H_
#define SPARSE_LAYERS_BASE_COMMON_CPU_SLOTS_H_

#include <string>

#include "absl/flags/declare.h"
#include "absl/status/status.h"

// --cpu_slot_dir: where build actions take their slot lock (empty: none).
ABSL_DECLARE_FLAG(std::string, cpu_slot_dir);

namespace sparse_layers {

// Blocks until a slot in `directory` is free; prints one line while waiting.
absl::Status AcquireCpuSlot(const std::string& directory, int threads);

// AcquireCpuSlot(--cpu_slot_dir, threads) when the flag is set; otherwise
// nothing (a binary run by hand does not queue).
absl::Status AcquireCpuSlotIfRequested(int threads);

}  // namespace sparse_layers

#endif  // SPARSE_LAYERS_BASE_COMMON_CPU_SLOTS_H_
