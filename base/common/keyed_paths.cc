#include "base/common/keyed_paths.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace sparse_layers {

absl::StatusOr<std::vector<KeyedPath>> KeyedPaths(
    absl::string_view flag, absl::string_view key_name,
    const std::vector<std::string>& entries) {
  std::vector<KeyedPath> out;
  for (const std::string& entry : entries) {
    const std::vector<std::string> parts = absl::StrSplit(entry, '=');
    if (parts.size() != 2) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--", flag, " entry '", entry, "': expected ", key_name, "=path"));
    }
    out.push_back({parts[0], parts[1]});
  }
  return out;
}

}  // namespace sparse_layers
