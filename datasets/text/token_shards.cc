#include "datasets/text/token_shards.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/common/digest.h"
#include "base/common/file_io.h"
#include "base/common/mapped_file.h"
#include "base/common/status_macros.h"
#include "google/protobuf/text_format.h"

namespace sparse_layers::datasets {
namespace {

constexpr char kMagic[8] = {'S', 'L', 'T', 'O', 'K', 'v', '1', '\0'};

// SplitMix64 finaliser: decorrelates the per-step seeds.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// The shard holding item `index` of cumulative per-shard counts, and the
// item's index within that shard.
std::pair<int, int64_t> Locate(const std::vector<int64_t>& cumulative,
                               int64_t index) {
  const int shard = static_cast<int>(
      std::upper_bound(cumulative.begin(), cumulative.end(), index) -
      cumulative.begin());
  return {shard, index - (shard == 0 ? 0 : cumulative[shard - 1])};
}

// The shard's bytes: the header (id_bytes 0 for uint16, so those headers are
// what they were before wider ids) and `count` ids of `id_bytes` each.
absl::Status WriteShard(const std::string& path, const void* ids, size_t count,
                        int id_bytes, int32_t vocab_size) {
  TokenShardHeader header{};
  std::memcpy(header.magic, kMagic, sizeof(kMagic));
  header.vocab_size = static_cast<uint32_t>(vocab_size);
  header.id_bytes = id_bytes == 2 ? 0 : static_cast<uint32_t>(id_bytes);
  header.tokens = count;
  ASSIGN_OR_RETURN(std::unique_ptr<AtomicFileWriter> writer,
                   AtomicFileWriter::Open(path));
  RETURN_IF_ERROR(writer->Append(absl::string_view(
      reinterpret_cast<const char*>(&header), sizeof(header))));
  RETURN_IF_ERROR(writer->Append(
      absl::string_view(reinterpret_cast<const char*>(ids), count * id_bytes)));
  return writer->Commit();
}

}  // namespace

absl::Status WriteTokenShard(const std::string& path,
                             absl::Span<const uint16_t> tokens,
                             int32_t vocab_size) {
  return WriteShard(path, tokens.data(), tokens.size(), sizeof(uint16_t),
                    vocab_size);
}

absl::Status WriteTokenShard(const std::string& path,
                             absl::Span<const uint32_t> tokens,
                             int32_t vocab_size) {
  return WriteShard(path, tokens.data(), tokens.size(), sizeof(uint32_t),
                    vocab_size);
}

TokenSplitWriter::TokenSplitWriter(std::string out_dir,
                                   TokenShardManifest header,
                                   int64_t shard_tokens)
    : out_dir_(std::move(out_dir)),
      manifest_(std::move(header)),
      shard_tokens_(shard_tokens) {}

absl::Status TokenSplitWriter::AddDocument(absl::Span<const int> ids,
                                           bool end_of_text) {
  for (int id : ids) {
    if (id < 0 || id >= manifest_.vocab_size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("token id ", id, " outside the vocabulary"));
    }
    buffer_.push_back(static_cast<uint32_t>(id));
  }
  if (end_of_text) {
    buffer_.push_back(static_cast<uint32_t>(manifest_.end_of_text_id()));
  }
  manifest_.set_documents(manifest_.documents() + 1);
  if (static_cast<int64_t>(buffer_.size()) >= shard_tokens_) return Flush();
  return absl::OkStatus();
}

absl::Status TokenSplitWriter::Flush() {
  if (buffer_.empty()) return absl::OkStatus();
  const std::string file = absl::StrFormat("%s_%03d.bin", manifest_.split(),
                                           manifest_.shards_size());
  const std::string path = absl::StrCat(out_dir_, "/", file);
  // uint16 ids whenever they fit, as before wider vocabularies.
  RETURN_IF_ERROR(
      manifest_.vocab_size() > kMaxUint16Vocabulary
          ? WriteTokenShard(path, buffer_, manifest_.vocab_size())
          : WriteTokenShard(
                path, std::vector<uint16_t>(buffer_.begin(), buffer_.end()),
                manifest_.vocab_size()));
  ASSIGN_OR_RETURN(const std::string digest, Sha256OfFile(path));
  TokenShard* shard = manifest_.add_shards();
  shard->set_file(file);
  shard->set_tokens(static_cast<int64_t>(buffer_.size()));
  shard->set_sha256(digest);
  manifest_.set_tokens(manifest_.tokens() + shard->tokens());
  buffer_.clear();
  return absl::OkStatus();
}

absl::StatusOr<TokenShardManifest> TokenSplitWriter::Finish() {
  RETURN_IF_ERROR(Flush());
  std::string text;
  google::protobuf::TextFormat::PrintToString(manifest_, &text);
  RETURN_IF_ERROR(WriteFileAtomically(
      absl::StrCat(out_dir_, "/", manifest_.split(), ".tokens.textproto"),
      text));
  return manifest_;
}

absl::StatusOr<std::unique_ptr<TokenShardSet>> TokenShardSet::Open(
    const std::string& manifest_path) {
  ASSIGN_OR_RETURN(const std::string text, ReadFileToString(manifest_path));
  std::unique_ptr<TokenShardSet> set(new TokenShardSet);
  set->manifest_path_ = manifest_path;
  if (!google::protobuf::TextFormat::ParseFromString(text, &set->manifest_)) {
    return absl::InvalidArgumentError(
        absl::StrCat(manifest_path, ": not a TokenShardManifest"));
  }
  const std::filesystem::path dir =
      std::filesystem::path(manifest_path).parent_path();
  int64_t total = 0;
  for (const TokenShard& entry : set->manifest_.shards()) {
    const std::string path = (dir / entry.file()).string();
    auto error = [&](absl::string_view what) {
      return absl::DataLossError(
          absl::StrCat("token shard ", path, ": ", what));
    };
    ASSIGN_OR_RETURN(MappedFile file, MappedFile::Open(path));
    const size_t size = file.size();
    if (size < sizeof(TokenShardHeader)) {
      return error(
          absl::StrCat("only ", size, " bytes, shorter than the header"));
    }
    const uint8_t* data = file.data();
    set->mappings_.push_back(std::move(file));
    TokenShardHeader header;
    std::memcpy(&header, data, sizeof(header));
    if (std::memcmp(header.magic, kMagic, sizeof(kMagic)) != 0) {
      return error("bad magic (not a token shard, or a different version)");
    }
    if (header.id_bytes != 0 && header.id_bytes != 4) {
      return error(absl::StrCat("ids of ", header.id_bytes,
                                " bytes (this reader takes 0 for uint16 or 4 "
                                "for uint32)"));
    }
    const int id_bytes = header.id_bytes == 0 ? 2 : 4;
    // Compared as a count, not a byte size: tokens * id_bytes may overflow.
    const uint64_t room = (size - sizeof(header)) / id_bytes;
    if (header.tokens != room || (size - sizeof(header)) % id_bytes != 0) {
      return error(absl::StrCat("header says ", header.tokens, " tokens of ",
                                id_bytes, " bytes but the file has ", size,
                                " bytes (room for ", room,
                                header.tokens > room ? ", truncated)" : ")"));
    }
    if (static_cast<int64_t>(header.tokens) != entry.tokens()) {
      return error(absl::StrCat("holds ", header.tokens,
                                " tokens, the manifest says ", entry.tokens()));
    }
    if (static_cast<int32_t>(header.vocab_size) !=
        set->manifest_.vocab_size()) {
      return error(absl::StrCat("vocabulary ", header.vocab_size,
                                ", the manifest says ",
                                set->manifest_.vocab_size()));
    }
    const TokenIds tokens(reinterpret_cast<const char*>(data) + sizeof(header),
                          header.tokens, id_bytes);
    int64_t largest = 0;
    for (size_t i = 0; i < tokens.size(); ++i) {
      largest = std::max(largest, tokens[i]);
    }
    if (!tokens.empty() && largest >= header.vocab_size) {
      return error(absl::StrCat("token id ", largest, " >= vocabulary size ",
                                header.vocab_size));
    }
    RETURN_IF_ERROR(VerifySha256(set->mappings_.back().bytes(), entry.sha256(),
                                 absl::StrCat("token shard ", path),
                                 manifest_path));
    set->shards_.push_back(tokens);
    total += entry.tokens();
  }
  if (total != set->manifest_.tokens()) {
    return absl::DataLossError(
        absl::StrCat(manifest_path, ": shards hold ", total,
                     " tokens, the manifest says ", set->manifest_.tokens()));
  }
  return set;
}

TokenShardSet::~TokenShardSet() = default;

absl::Status TokenShardSet::CheckSameTokenizer(
    const TokenShardSet& other) const {
  const TokenShardManifest& a = manifest_;
  const TokenShardManifest& b = other.manifest_;
  auto mismatch = [&](absl::string_view field, const auto& mine,
                      const auto& theirs) {
    return absl::FailedPreconditionError(
        absl::StrCat(manifest_path_, " and ", other.manifest_path_,
                     " were encoded with different tokenizers: ", field, " ",
                     mine, " vs ", theirs));
  };
  if (a.tokenizer_sha256() != b.tokenizer_sha256()) {
    auto shown = [](const std::string& sha) {
      return sha.empty() ? std::string("(none)") : sha.substr(0, 12);
    };
    return mismatch("tokenizer_sha256", shown(a.tokenizer_sha256()),
                    shown(b.tokenizer_sha256()));
  }
  if (a.vocab_size() != b.vocab_size()) {
    return mismatch("vocab_size", a.vocab_size(), b.vocab_size());
  }
  if (a.end_of_text_id() != b.end_of_text_id()) {
    return mismatch("end_of_text_id", a.end_of_text_id(), b.end_of_text_id());
  }
  return absl::OkStatus();
}

BatchSampler::BatchSampler(const TokenShardSet* shards, int batch_size,
                           int sequence_length, uint64_t seed)
    : shards_(shards),
      batch_size_(batch_size),
      sequence_length_(sequence_length),
      seed_(seed) {
  int64_t starts = 0;
  int64_t windows = 0;
  for (int i = 0; i < shards->shard_count(); ++i) {
    const int64_t size = static_cast<int64_t>(shards->shard(i).size());
    starts += std::max<int64_t>(0, size - sequence_length);
    windows += std::max<int64_t>(0, (size - 1) / sequence_length);
    start_positions_.push_back(starts);
    eval_windows_.push_back(windows);
  }
}

absl::StatusOr<BatchSampler> BatchSampler::Create(const TokenShardSet* shards,
                                                  int batch_size,
                                                  int sequence_length,
                                                  uint64_t seed) {
  if (batch_size <= 0 || sequence_length <= 0) {
    return absl::InvalidArgumentError("batch size and length must be positive");
  }
  BatchSampler sampler(shards, batch_size, sequence_length, seed);
  if (sampler.start_positions_.empty() ||
      sampler.start_positions_.back() == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("no token shard of split '", shards->manifest().split(),
                     "' holds ", sequence_length + 1, " tokens"));
  }
  return sampler;
}

TokenBatch BatchSampler::EmptyBatch() const {
  TokenBatch batch;
  batch.batch_size = batch_size_;
  batch.sequence_length = sequence_length_;
  batch.inputs.resize(static_cast<size_t>(batch_size_) * sequence_length_);
  batch.targets.resize(batch.inputs.size());
  return batch;
}

void BatchSampler::CopyWindow(int shard, int64_t offset, int row,
                              TokenBatch& batch) const {
  const TokenIds tokens = shards_->shard(shard);
  int64_t* inputs =
      batch.inputs.data() + static_cast<size_t>(row) * sequence_length_;
  int64_t* targets =
      batch.targets.data() + static_cast<size_t>(row) * sequence_length_;
  for (int t = 0; t < sequence_length_; ++t) {
    inputs[t] = tokens[offset + t];
    targets[t] = tokens[offset + t + 1];
  }
}

TokenBatch BatchSampler::TrainBatch(int64_t step) const {
  TokenBatch batch = EmptyBatch();
  std::mt19937_64 generator(Mix(seed_ ^ Mix(static_cast<uint64_t>(step))));
  const uint64_t total = static_cast<uint64_t>(start_positions_.back());
  for (int row = 0; row < batch_size_; ++row) {
    // Modulo bias is below total / 2^64: negligible, and fully deterministic.
    const int64_t position = static_cast<int64_t>(generator() % total);
    const auto [shard, offset] = Locate(start_positions_, position);
    CopyWindow(shard, offset, row, batch);
  }
  return batch;
}

TokenBatch BatchSampler::EvalBatch(int64_t index, int64_t batches) const {
  TokenBatch batch = EmptyBatch();
  const int64_t windows = EvalWindowCount();
  const int64_t wanted = std::max<int64_t>(1, batches) * batch_size_;
  for (int row = 0; row < batch_size_; ++row) {
    // Window k of `wanted` evenly spaced ones (all of them if there are fewer).
    const int64_t k = index * batch_size_ + row;
    const int64_t window =
        wanted >= windows ? k % windows : k * windows / wanted;
    const auto [shard, offset] = Locate(eval_windows_, window);
    CopyWindow(shard, offset * sequence_length_, row, batch);
  }
  return batch;
}

}  // namespace sparse_layers::datasets
