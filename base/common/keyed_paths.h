// List flags of "<key>=<path>" entries (--models=dense=a.pt,mohd_x2=b.pt,
// --caches=1=c.textproto,...), split once for every tool that takes one. Apart
// from main.h so the trainer, which takes none, does not link it.
#ifndef SPARSE_LAYERS_BASE_COMMON_KEYED_PATHS_H_
#define SPARSE_LAYERS_BASE_COMMON_KEYED_PATHS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace sparse_layers {

struct KeyedPath {
  std::string key, path;
};

// Each entry split at its one '='; any other entry is InvalidArgumentError
// "--<flag> entry '<entry>': expected <key_name>=path".
absl::StatusOr<std::vector<KeyedPath>> KeyedPaths(
    absl::string_view flag, absl::string_view key_name,
    const std::vector<std::string>& entries);

}  // namespace sparse_layers

#endif  // SPARSE_LAYERS_BASE_COMMON_KEYED_PATHS_H_
