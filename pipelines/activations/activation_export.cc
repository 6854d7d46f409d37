#include "pipelines/activations/activation_export.h"

#include <filesystem>
#include <map>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/common/status_macros.h"
#include "models/checkpoints/safetensors.h"

namespace sparse_layers::datasets {

absl::StatusOr<std::vector<std::string>> ExportActivationCache(
    const ActivationSet& set, const std::string& out_dir) {
  std::error_code error;
  std::filesystem::create_directories(out_dir, error);
  if (error) {
    return absl::PermissionDeniedError(
        absl::StrCat(out_dir, ": cannot create: ", error.message()));
  }
  const ActivationManifest& manifest = set.manifest();
  std::vector<std::string> written;
  int64_t first_row = 0;
  for (int shard = 0; shard < manifest.shards_size(); ++shard) {
    const int64_t rows = manifest.shards(shard).rows();
    auto [inputs, targets] = set.Range(first_row, first_row + rows);
    const std::map<std::string, std::string> metadata = {
        {"format", kActivationExportFormat},
        {"split", manifest.split()},
        {"hook_in", manifest.hook_in()},
        {"hook_out", manifest.hook_out()},
        {"layer", absl::StrCat(manifest.layer())},
        {"d_in", absl::StrCat(manifest.d_in())},
        {"d_out", absl::StrCat(manifest.d_out())},
        {"rows", absl::StrCat(rows)},
        {"first_row", absl::StrCat(first_row)},
        {"sequence_length", absl::StrCat(manifest.sequence_length())},
        {"checkpoint_sha256", manifest.checkpoint_sha256()},
        {"config_sha256", manifest.config_sha256()},
        {"tokens_manifest_sha256", manifest.tokens_manifest_sha256()},
    };
    const std::string path =
        (std::filesystem::path(out_dir) /
         absl::StrFormat("%s-%05d.safetensors", manifest.split(), shard))
            .string();
    RETURN_IF_ERROR(layers::WriteSafetensors(
        path, {{"inputs", inputs}, {"targets", targets}}, metadata));
    written.push_back(path);
    first_row += rows;
  }
  return written;
}

}  // namespace sparse_layers::datasets
