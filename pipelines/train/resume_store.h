// Resumable training actions: Bazel deletes a killed action's outputs and
// reruns it from scratch, so a training action keeps its periodic checkpoint
// in a directory outside the sandbox, under a key of everything the action
// reads. A rerun of the same action (same key) continues from that checkpoint
// and, the trainer being deterministic per (seed, step), ends with the bytes
// of an uninterrupted run; the action's own inputs and cache key are those of
// a run that never stopped.
#ifndef SPARSE_LAYERS_PIPELINES_TRAIN_RESUME_STORE_H_
#define SPARSE_LAYERS_PIPELINES_TRAIN_RESUME_STORE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace sparse_layers::train {

// A leading "~/" becomes the home directory of the user running the process
// (from the password database: Bazel actions see no $HOME), so one literal
// argument names every user's own store and stays out of action keys' way.
std::string ExpandHomeDirectory(const std::string& path);

// The key of a training action: SHA-256 over the tool's executable, the
// arguments that shape its result (not its output paths) and the bytes of
// every file those arguments name (manifests record their shards' digests).
absl::StatusOr<std::string> ResumeKey(const std::string& executable,
                                      const std::vector<std::string>& arguments,
                                      const std::vector<std::string>& files);

// One action's entry in the store: <directory>/<key>.pt and its snapshots
// <key>.snapshot<i>, held under an exclusive lock (<key>.lock) so two builds
// running the same action never write one checkpoint.
class ResumeEntry {
 public:
  // Creates `directory` if needed. Fails when it cannot be written (a sandbox
  // without --sandbox_writable_path) or when another process holds the key.
  static absl::StatusOr<ResumeEntry> Open(const std::string& directory,
                                          const std::string& key);
  ResumeEntry(ResumeEntry&& other) noexcept;
  ResumeEntry& operator=(ResumeEntry&&) = delete;
  ~ResumeEntry();

  const std::string& checkpoint_path() const { return checkpoint_path_; }
  // Where the run keeps its `index`th snapshot until its outputs are
  // published: a resumed run past a snapshot's step still has it.
  std::string SnapshotPath(int index) const;
  // Deletes the checkpoint and snapshots once the outputs are published.
  absl::Status Remove();

 private:
  ResumeEntry(std::string base, std::string checkpoint_path,
              std::string lock_path, int lock_fd)
      : base_(std::move(base)),
        checkpoint_path_(std::move(checkpoint_path)),
        lock_path_(std::move(lock_path)),
        lock_fd_(lock_fd) {}
  std::string base_;  // <directory>/<key>
  std::string checkpoint_path_;
  std::string lock_path_;
  int lock_fd_ = -1;
};

struct CleanedEntries {
  int removed = 0;
  int64_t bytes_kept = 0;
};

// Removes entries (all of <key>.*) untouched for `max_age`, then the oldest
// until the rest fit in `max_bytes`; entries locked by a running action are
// never touched.
absl::StatusOr<CleanedEntries> CleanResumeStore(const std::string& directory,
                                                absl::Duration max_age,
                                                int64_t max_bytes,
                                                absl::Time now);

// What a resumable run keeps: entries untouched for two weeks, or beyond
// 20 GiB in all (oldest first), are removed when the next run starts.
inline constexpr absl::Duration kResumeEntryMaxAge = absl::Hours(24 * 14);
inline constexpr int64_t kResumeStoreMaxBytes = int64_t{20} << 30;

// The entry of one run in `directory` ("~/" expanded), after cleaning the
// store. nullopt, with one line on stderr, when the store cannot be used (not
// writable, or the same run is active elsewhere): the run then trains as it
// would without a store, only not resumably.
std::optional<ResumeEntry> OpenResumeEntry(
    const std::string& directory, const std::string& executable,
    const std::vector<std::string>& arguments,
    const std::vector<std::string>& files);

}  // namespace sparse_layers::train

#endif  // SPARSE_LAYERS_PIPELINES_TRAIN_RESUME_STORE_H_
