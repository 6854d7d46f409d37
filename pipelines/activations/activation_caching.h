// Caching one block's sub-layer activations: a trained model runs over a
// token split and the (FFN input, FFN output) pair, or the (attention input,
// attention output) pair, of every position at one block is stored as
// activation shards, so each replacement layer trains on the same pairs
// without rerunning the model (cached once, where the papers' code streams
// them; for Lorsa whole windows, so positions can be mixed again).
#ifndef SPARSE_LAYERS_PIPELINES_ACTIVATIONS_ACTIVATION_CACHING_H_
#define SPARSE_LAYERS_PIPELINES_ACTIVATIONS_ACTIVATION_CACHING_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "base/common/staged_outputs.h"
#include "pipelines/activations/activations.pb.h"

namespace sparse_layers::datasets {

struct ActivationCacheOptions {
  std::string checkpoint;  // Trained model (.pt).
  std::string tokens;      // Token shard manifest of one split.
  std::string out_dir;
  int layer = 0;  // Block whose sub-layer input and output are cached.
  // "ffn" (normalised FFN input -> FFN output) or "attn" (normalised attention
  // input -> attention output, whole windows).
  std::string site = "ffn";
  int64_t rows = 65536;     // Rows (token positions) to cache.
  int sequence_length = 0;  // Window length (0: the model's context).
  int batch = 8;            // Windows per forward pass.
  int64_t shard_rows = int64_t{1} << 17;  // Rows per shard file.
};

// Forward passes of `batch` windows of `length` tokens that cover `rows`
// rows, at most the split's `eval_windows` / `batch`.
int64_t ActivationCacheBatches(int64_t rows, int batch, int length,
                               int64_t eval_windows);

// Rows a batch of `batch` x `length` positions adds when `wanted` rows are
// still missing; attention sites take whole windows only.
int64_t ActivationRowsToTake(int64_t wanted, int batch, int length,
                             bool whole_windows);

// Stages options.out_dir in `staged` and writes the shards and their
// manifest there; the caller commits. Rows follow the evaluation order of the
// split's windows (BatchSampler::EvalBatch, seeded by the model's config).
absl::StatusOr<ActivationManifest> CacheActivations(
    const ActivationCacheOptions& options, StagedOutputs& staged);

}  // namespace sparse_layers::datasets

#endif  // SPARSE_LAYERS_PIPELINES_ACTIVATIONS_ACTIVATION_CACHING_H_
