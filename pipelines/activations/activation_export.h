// Activation caches out to Python: each shard of a cached split as one
// safetensors file that SAELens, PyTorch or numpy read without this project.
//
// Name scheme (format "sparse_layers.activations.v1"), one file per shard,
// <out_dir>/<split>-NNNNN.safetensors, NNNNN the shard's index:
//   "inputs"   (rows, d_in)  float32: the layer's input, hook_in
//   "targets"  (rows, d_out) float32: what it is fitted to give, hook_out
// Row r of a file is row first_row + r of the split, in cache order (windows
// of sequence_length positions, one row a position). __metadata__ (all
// strings): format, split, hook_in, hook_out, layer, d_in, d_out, rows,
// first_row, sequence_length, checkpoint_sha256 (the model the rows came
// from), config_sha256, tokens_manifest_sha256.
#ifndef SPARSE_LAYERS_PIPELINES_ACTIVATIONS_ACTIVATION_EXPORT_H_
#define SPARSE_LAYERS_PIPELINES_ACTIVATIONS_ACTIVATION_EXPORT_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "pipelines/activations/activation_shards.h"

namespace sparse_layers::datasets {

inline constexpr char kActivationExportFormat[] =
    "sparse_layers.activations.v1";

// Writes one safetensors file per shard of `set` into `out_dir` (created when
// missing), one shard in memory at a time; returns the paths written, in
// shard order.
absl::StatusOr<std::vector<std::string>> ExportActivationCache(
    const ActivationSet& set, const std::string& out_dir);

}  // namespace sparse_layers::datasets

#endif  // SPARSE_LAYERS_PIPELINES_ACTIVATIONS_ACTIVATION_EXPORT_H_
