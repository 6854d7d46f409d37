// All-or-nothing output sets for binaries that write several files or a
// directory: a failed or killed run leaves none of them half-written, and two
// runs writing the same output cannot both succeed.
#ifndef SPARSE_LAYERS_BASE_COMMON_STAGED_OUTPUTS_H_
#define SPARSE_LAYERS_BASE_COMMON_STAGED_OUTPUTS_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace sparse_layers {

// Each output is built at a temporary sibling, `path`.tmp.<pid>.staged, and
// Commit() renames them all into place only after every one was written.
// Staging an output also locks it (flock(2) on `path`.lock, until this object
// is destroyed) and removes stale temporaries of killed runs; destroying
// uncommitted outputs removes what was staged.
//
//   StagedOutputs outputs;
//   absl::StatusOr<std::string> dir = outputs.StageDirectory(out_dir);
//   ... write files under *dir ...
//   if (absl::Status s = outputs.WriteFile(manifest, text); !s.ok()) ...
//   return outputs.Commit();
class StagedOutputs {
 public:
  StagedOutputs() = default;
  StagedOutputs(const StagedOutputs&) = delete;
  StagedOutputs& operator=(const StagedOutputs&) = delete;
  ~StagedOutputs();

  // Stages `path` and returns the temporary file to write instead; it is
  // created (empty) now, so an unwritable path fails before the work. Fails
  // at once when another process holds the output's lock.
  absl::StatusOr<std::string> StageFile(const std::string& path);
  // The same for a directory: returns an empty temporary directory.
  absl::StatusOr<std::string> StageDirectory(const std::string& path);
  // Stages `path` (unless it is) and writes `contents` to its temporary.
  absl::Status WriteFile(const std::string& path, absl::string_view contents);

  // Renames every staged output onto its path, replacing what was there. When
  // one rename fails, those done are undone (the replaced versions come back)
  // and nothing staged remains.
  absl::Status Commit();

  // Writes each (file name, contents) under `dir` and commits: a tool's
  // tables appear all together or not at all. Defined here, inline, so that
  // binaries not calling it link the same bytes.
  absl::Status WriteFilesAndCommit(
      absl::string_view dir,
      absl::Span<const std::pair<absl::string_view, absl::string_view>> files) {
    for (const auto& [file, contents] : files) {
      if (absl::Status status =
              WriteFile(absl::StrCat(dir, "/", file), contents);
          !status.ok()) {
        return status;
      }
    }
    return Commit();
  }

 private:
  struct Output {
    std::string path;
    std::string staged;
    bool directory = false;
    int lock = -1;  // Descriptor of the locked `path`.lock.
  };
  absl::StatusOr<std::string> Stage(const std::string& path, bool directory);

  std::vector<Output> outputs_;
  bool committed_ = false;
};

}  // namespace sparse_layers

#endif  // SPARSE_LAYERS_BASE_COMMON_STAGED_OUTPUTS_H_
