// Bazel 4 cannot reserve several cores for one build action (resource_set and
// "resources:cpu" came in later versions), so an action takes one lock (flock)
// per thread out of one per core before computing: two 2-thread trainings, or a
// 2-thread cache beside a 1-thread training, never share 2 cores, and two
// 1-thread trainings run together. The locks are released when the process
// exits.
#ifndef SPARSE_LAYERS_BASE_COMMON_CPU_SLOTS_H_
#define SPARSE_LAYERS_BASE_COMMON_CPU_SLOTS_H_

#include <string>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"

// --cpu_slot_dir: where build actions take their core locks (empty: none).
ABSL_DECLARE_FLAG(std::string, cpu_slot_dir);

namespace sparse_layers {

// Takes min(threads, cores) of the `cores` lock files in `directory` at once:
// their open descriptors, which hold the locks until closed, or an empty list
// (and none held) when fewer are free.
absl::StatusOr<std::vector<int>> TryLockCores(const std::string& directory,
                                              int threads, int cores);

// Blocks until `threads` of this machine's core locks in `directory` are free
// and takes them; prints one line while waiting.
absl::Status AcquireCpuSlot(const std::string& directory, int threads);

// AcquireCpuSlot(--cpu_slot_dir, threads) when the flag is set; otherwise
// nothing (a binary run by hand does not queue).
absl::Status AcquireCpuSlotIfRequested(int threads);

}  // namespace sparse_layers

#endif  // SPARSE_LAYERS_BASE_COMMON_CPU_SLOTS_H_
