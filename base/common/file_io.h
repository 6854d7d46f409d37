// Whole-file reads and crash-safe writes: every output of the project is
// written to a temporary name and renamed, so a killed action leaves no partial
// file (a rule for every output in the project).
#ifndef SPARSE_LAYERS_BASE_COMMON_FILE_IO_H_
#define SPARSE_LAYERS_BASE_COMMON_FILE_IO_H_

#include <cstdio>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace sparse_layers {

absl::StatusOr<std::string> ReadFileToString(const std::string& path);

// Removes the temporaries `path`.tmp.<pid>[.*] of processes that no longer
// run (a killed writer's); those of live processes stay. Every atomic write
// calls it, so a kill leaves litter only until the next write of the path.
void RemoveStaleTemporaries(const std::string& path);

// Writes `contents` to `path` through `path`.tmp.<pid> and rename(2).
absl::Status WriteFileAtomically(const std::string& path,
                                 absl::string_view contents);

// Streams a large output to a temporary file; Commit() renames it into place.
// Destroying an uncommitted writer removes the temporary file.
class AtomicFileWriter {
 public:
  static absl::StatusOr<std::unique_ptr<AtomicFileWriter>> Open(
      const std::string& path);
  ~AtomicFileWriter();

  absl::Status Append(absl::string_view bytes);
  absl::Status Commit();

 private:
  AtomicFileWriter(std::string path, std::string temporary, std::FILE* file)
      : path_(std::move(path)), temporary_(std::move(temporary)), file_(file) {}

  std::string path_;
  std::string temporary_;
  std::FILE* file_;
};

}  // namespace sparse_layers

#endif  // SPARSE_LAYERS_BASE_COMMON_FILE_IO_H_
