// Token shards: token ids (uint16, or uint32 when the vocabulary exceeds
// 65,536 ids) after a 32-byte header, described by a TokenShardManifest; read
// through mmap and sampled into (B, T) batches that depend only on (seed,
// step), so a resumed run sees the same data.
#ifndef SPARSE_LAYERS_DATASETS_TEXT_TOKEN_SHARDS_H_
#define SPARSE_LAYERS_DATASETS_TEXT_TOKEN_SHARDS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "base/common/mapped_file.h"
#include "datasets/text/corpus.pb.h"

namespace sparse_layers::datasets {

// On-disk header, little-endian: magic "SLTOKv1\0", vocab size, bytes per id
// (0 for uint16, as in every shard written before wider ids, so their bytes
// are unchanged; 4 for uint32), token count.
struct TokenShardHeader {
  char magic[8];
  uint32_t vocab_size;
  uint32_t id_bytes;
  uint64_t tokens;
  uint64_t reserved2;
};
static_assert(sizeof(TokenShardHeader) == 32);

// The largest vocabulary whose ids TokenSplitWriter stores as uint16; larger
// ones (Llama 3's 128,256 pieces) are stored as uint32.
inline constexpr int64_t kMaxUint16Vocabulary = int64_t{1} << 16;

// Writes one shard atomically, with ids of the span's width.
absl::Status WriteTokenShard(const std::string& path,
                             absl::Span<const uint16_t> tokens,
                             int32_t vocab_size);
absl::Status WriteTokenShard(const std::string& path,
                             absl::Span<const uint32_t> tokens,
                             int32_t vocab_size);

// One shard's ids as stored (uint16 or uint32), read as int64_t.
class TokenIds {
 public:
  TokenIds(const void* data, size_t size, int id_bytes)
      : data_(data), size_(size), id_bytes_(id_bytes) {}
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  int id_bytes() const { return id_bytes_; }
  int64_t operator[](size_t i) const {
    return id_bytes_ == 4 ? static_cast<const uint32_t*>(data_)[i]
                          : static_cast<const uint16_t*>(data_)[i];
  }

 private:
  const void* data_;
  size_t size_;
  int id_bytes_;
};

// Writes one split: shards that break between documents once they reach
// `shard_tokens`, then <out_dir>/<split>.tokens.textproto.
class TokenSplitWriter {
 public:
  // `header` carries split, vocab_size, end_of_text_id and the digests.
  TokenSplitWriter(std::string out_dir, TokenShardManifest header,
                   int64_t shard_tokens);
  // Appends one document's ids, then the end-of-text id when asked.
  absl::Status AddDocument(absl::Span<const int> ids, bool end_of_text);
  absl::StatusOr<TokenShardManifest> Finish();

 private:
  absl::Status Flush();
  std::string out_dir_;
  TokenShardManifest manifest_;
  int64_t shard_tokens_;
  std::vector<uint32_t> buffer_;
};

// Memory-mapped shards of one split, validated on open: magic, sizes against
// header and manifest, and every id below the vocabulary size.
class TokenShardSet {
 public:
  static absl::StatusOr<std::unique_ptr<TokenShardSet>> Open(
      const std::string& manifest_path);
  ~TokenShardSet();

  const TokenShardManifest& manifest() const { return manifest_; }
  const std::string& manifest_path() const { return manifest_path_; }
  // OK when `other` was encoded with the same tokenizer (its SHA-256,
  // vocabulary and end-of-text id); else an error naming both manifests and
  // both values, so validation tokens of another tokenizer never pair with
  // these training tokens.
  absl::Status CheckSameTokenizer(const TokenShardSet& other) const;
  int shard_count() const { return static_cast<int>(shards_.size()); }
  TokenIds shard(int index) const { return shards_[index]; }
  int64_t tokens() const { return manifest_.tokens(); }

 private:
  TokenShardSet() = default;
  TokenShardManifest manifest_;
  std::string manifest_path_;
  std::vector<TokenIds> shards_;
  std::vector<MappedFile> mappings_;
};

// One (B, T) batch: targets are the inputs shifted by one token.
struct TokenBatch {
  int batch_size = 0;
  int sequence_length = 0;
  std::vector<int64_t> inputs;   // batch_size * sequence_length, row-major.
  std::vector<int64_t> targets;  // Same shape.
};

class BatchSampler {
 public:
  // Fails when no shard holds sequence_length + 1 tokens.
  static absl::StatusOr<BatchSampler> Create(const TokenShardSet* shards,
                                             int batch_size,
                                             int sequence_length,
                                             uint64_t seed);

  // Training batch of `step`: windows at uniformly random offsets drawn from
  // (seed, step) alone.
  TokenBatch TrainBatch(int64_t step) const;

  // Evaluation batch `index` of `batches`: non-overlapping windows spread
  // evenly over all shards (so every source of a split is represented).
  TokenBatch EvalBatch(int64_t index, int64_t batches) const;
  int64_t EvalWindowCount() const { return eval_windows_.back(); }

 private:
  BatchSampler(const TokenShardSet* shards, int batch_size, int sequence_length,
               uint64_t seed);
  void CopyWindow(int shard, int64_t offset, int row, TokenBatch& batch) const;
  TokenBatch EmptyBatch() const;

  const TokenShardSet* shards_;
  int batch_size_;
  int sequence_length_;
  uint64_t seed_;
  std::vector<int64_t> start_positions_;  // Cumulative window starts per shard.
  std::vector<int64_t> eval_windows_;     // Cumulative eval windows per shard.
};

}  // namespace sparse_layers::datasets

#endif  // SPARSE_LAYERS_DATASETS_TEXT_TOKEN_SHARDS_H_
