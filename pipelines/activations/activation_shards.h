// Activation caches (activations.proto): a writer that streams (x, y) rows
// into shards, and a memory-mapped reader serving shuffled training batches
// that depend only on (seed, step) and contiguous evaluation ranges.
#ifndef SPARSE_LAYERS_PIPELINES_ACTIVATIONS_ACTIVATION_SHARDS_H_
#define SPARSE_LAYERS_PIPELINES_ACTIVATIONS_ACTIVATION_SHARDS_H_

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "base/common/file_io.h"
#include "base/common/mapped_file.h"
#include "pipelines/activations/activations.pb.h"

namespace sparse_layers::datasets {

// On-disk header, little-endian.
struct ActivationShardHeader {
  char magic[8];  // "SLACTv1\0"
  uint32_t d_in;
  uint32_t d_out;
  uint64_t rows;
  uint64_t reserved;
};
static_assert(sizeof(ActivationShardHeader) == 32);

// Streams rows into <out_dir>/<split>-NNNNN.f32 shards of at most
// `shard_rows` rows, then writes <out_dir>/<split>.activations.textproto.
class ActivationWriter {
 public:
  // `header` carries split, hooks, layer, d_in, d_out and the digests.
  ActivationWriter(std::string out_dir, ActivationManifest header,
                   int64_t shard_rows);
  // x: (rows, d_in), y: (rows, d_out), float32.
  absl::Status Append(const torch::Tensor& x, const torch::Tensor& y);
  absl::StatusOr<ActivationManifest> Finish();

 private:
  absl::Status Flush();
  std::string out_dir_;
  ActivationManifest manifest_;
  int64_t shard_rows_;
  std::vector<float> buffer_;  // Interleaved rows [x | y].
  std::vector<double> output_sum_;
};

// The rows of one split, memory-mapped and validated on open (magic, sizes
// against header and manifest).
class ActivationSet {
 public:
  static absl::StatusOr<std::unique_ptr<ActivationSet>> Open(
      const std::string& manifest_path);
  ~ActivationSet();

  const ActivationManifest& manifest() const { return manifest_; }
  int64_t rows() const { return manifest_.rows(); }
  int64_t d_in() const { return manifest_.d_in(); }
  int64_t d_out() const { return manifest_.d_out(); }

  // OK when the cache was made from `checkpoint_path` (the SHA-256 its
  // manifest records); else an error naming both, so a cache of another
  // model never pairs silently with this one.
  absl::Status CheckMadeFrom(const std::string& checkpoint_path) const;
  // OK when `other` caches the same site (block, hooks, widths, checkpoint);
  // else an error naming both manifests and the first field that differs, so
  // a validation cache of another block never scores this one's fit.
  absl::Status CheckSameSiteAs(const ActivationSet& other) const;
  // OK when the cache is of block `layer` at a hook_out containing `site`
  // (".ffn." or ".attn."); else an error naming what it caches.
  absl::Status CheckSite(int layer, absl::string_view site,
                         absl::string_view what) const;

  // Rows [begin, end) as (x, y) float32 tensors (copies).
  std::pair<torch::Tensor, torch::Tensor> Range(int64_t begin,
                                                int64_t end) const;
  // The given rows, in order.
  std::pair<torch::Tensor, torch::Tensor> Gather(
      const std::vector<int64_t>& rows) const;
  // Training batch `step` of `batch_size` rows: epochs are permutations of
  // all rows drawn from (seed, epoch), so a batch depends on (seed, step)
  // alone and every row is seen once per epoch. With unit_rows > 1 the
  // permuted units are blocks of that many consecutive rows (whole windows,
  // for attention replacements), batch_size of them, rows in order.
  std::pair<torch::Tensor, torch::Tensor> TrainBatch(
      int64_t step, int64_t batch_size, uint64_t seed,
      int64_t unit_rows = 1) const;

 private:
  ActivationSet() = default;
  const float* Row(int64_t row) const;
  ActivationManifest manifest_;
  std::string manifest_path_;
  std::vector<const float*> shard_rows_;  // First row of each shard.
  std::vector<int64_t> shard_starts_;     // Cumulative first-row indices.
  std::vector<MappedFile> mappings_;
  mutable int64_t permutation_epoch_ = -1;
  mutable uint64_t permutation_seed_ = 0;
  mutable std::vector<int64_t> permutation_;
};

}  // namespace sparse_layers::datasets

#endif  // SPARSE_LAYERS_PIPELINES_ACTIVATIONS_ACTIVATION_SHARDS_H_
