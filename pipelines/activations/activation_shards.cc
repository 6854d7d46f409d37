#include "pipelines/activations/activation_shards.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <random>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/common/digest.h"
#include "base/common/mapped_file.h"
#include "base/common/status_macros.h"
#include "google/protobuf/text_format.h"

namespace sparse_layers::datasets {
namespace {

constexpr char kMagic[8] = {'S', 'L', 'A', 'C', 'T', 'v', '1', '\0'};

std::string ManifestPath(const std::string& out_dir, const std::string& split) {
  return (std::filesystem::path(out_dir) / (split + ".activations.textproto"))
      .string();
}

}  // namespace

ActivationWriter::ActivationWriter(std::string out_dir,
                                   ActivationManifest header,
                                   int64_t shard_rows)
    : out_dir_(std::move(out_dir)),
      manifest_(std::move(header)),
      shard_rows_(shard_rows),
      output_sum_(manifest_.d_out(), 0.0) {
  manifest_.clear_shards();
  manifest_.set_rows(0);
}

absl::Status ActivationWriter::Append(const torch::Tensor& x,
                                      const torch::Tensor& y) {
  const int64_t d_in = manifest_.d_in(), d_out = manifest_.d_out();
  if (x.dim() != 2 || y.dim() != 2 || x.size(0) != y.size(0) ||
      x.size(1) != d_in || y.size(1) != d_out) {
    return absl::InvalidArgumentError(absl::StrCat(
        "activation rows must be (n, ", d_in, ") and (n, ", d_out, ")"));
  }
  const torch::Tensor rows =
      torch::cat({x.to(torch::kFloat), y.to(torch::kFloat)}, 1).contiguous();
  const torch::Tensor sums = y.to(torch::kDouble).sum(0).contiguous();
  for (int64_t o = 0; o < d_out; ++o) {
    output_sum_[o] += sums.data_ptr<double>()[o];
  }
  const float* data = rows.data_ptr<float>();
  const int64_t width = d_in + d_out;
  for (int64_t r = 0; r < rows.size(0); ++r) {
    buffer_.insert(buffer_.end(), data + r * width, data + (r + 1) * width);
    if (static_cast<int64_t>(buffer_.size()) >= shard_rows_ * width) {
      RETURN_IF_ERROR(Flush());
    }
  }
  return absl::OkStatus();
}

absl::Status ActivationWriter::Flush() {
  if (buffer_.empty()) return absl::OkStatus();
  const uint64_t rows = buffer_.size() / (manifest_.d_in() + manifest_.d_out());
  ActivationShardHeader header{};
  std::memcpy(header.magic, kMagic, sizeof(kMagic));
  header.d_in = manifest_.d_in();
  header.d_out = manifest_.d_out();
  header.rows = rows;
  const std::string name = absl::StrFormat("%s-%05d.f32", manifest_.split(),
                                           manifest_.shards_size());
  const std::string path = (std::filesystem::path(out_dir_) / name).string();
  ASSIGN_OR_RETURN(std::unique_ptr<AtomicFileWriter> file,
                   AtomicFileWriter::Open(path));
  const absl::string_view header_bytes(reinterpret_cast<const char*>(&header),
                                       sizeof(header));
  const absl::string_view body(reinterpret_cast<const char*>(buffer_.data()),
                               buffer_.size() * sizeof(float));
  Sha256 digest;
  digest.Update(header_bytes);
  digest.Update(body);
  RETURN_IF_ERROR(file->Append(header_bytes));
  RETURN_IF_ERROR(file->Append(body));
  RETURN_IF_ERROR(file->Commit());
  ActivationShard* shard = manifest_.add_shards();
  shard->set_file(name);
  shard->set_rows(rows);
  shard->set_sha256(digest.HexDigest());
  manifest_.set_rows(manifest_.rows() + rows);
  buffer_.clear();
  return absl::OkStatus();
}

absl::StatusOr<ActivationManifest> ActivationWriter::Finish() {
  RETURN_IF_ERROR(Flush());
  if (manifest_.rows() == 0) {
    return absl::FailedPreconditionError("no activation rows were written");
  }
  manifest_.clear_output_mean();
  for (double sum : output_sum_) {
    manifest_.add_output_mean(static_cast<float>(sum / manifest_.rows()));
  }
  std::string text;
  google::protobuf::TextFormat::PrintToString(manifest_, &text);
  RETURN_IF_ERROR(
      WriteFileAtomically(ManifestPath(out_dir_, manifest_.split()), text));
  return manifest_;
}

absl::StatusOr<std::unique_ptr<ActivationSet>> ActivationSet::Open(
    const std::string& manifest_path) {
  ASSIGN_OR_RETURN(const std::string text, ReadFileToString(manifest_path));
  std::unique_ptr<ActivationSet> set(new ActivationSet());
  set->manifest_path_ = manifest_path;
  if (!google::protobuf::TextFormat::ParseFromString(text, &set->manifest_)) {
    return absl::InvalidArgumentError(
        absl::StrCat(manifest_path, ": not an ActivationManifest"));
  }
  const std::filesystem::path dir =
      std::filesystem::path(manifest_path).parent_path();
  const int64_t width = set->manifest_.d_in() + set->manifest_.d_out();
  int64_t total = 0;
  for (const ActivationShard& entry : set->manifest_.shards()) {
    const std::string path = (dir / entry.file()).string();
    auto error = [&](absl::string_view what) {
      return absl::DataLossError(
          absl::StrCat("activation shard ", path, ": ", what));
    };
    ASSIGN_OR_RETURN(MappedFile file, MappedFile::Open(path));
    const size_t size = file.size();
    if (size < sizeof(ActivationShardHeader)) {
      return error("shorter than the header");
    }
    const uint8_t* data = file.data();
    set->mappings_.push_back(std::move(file));
    ActivationShardHeader header;
    std::memcpy(&header, data, sizeof(header));
    if (std::memcmp(header.magic, kMagic, sizeof(kMagic)) != 0) {
      return error("bad magic (not an activation shard)");
    }
    if (static_cast<int32_t>(header.d_in) != set->manifest_.d_in() ||
        static_cast<int32_t>(header.d_out) != set->manifest_.d_out() ||
        static_cast<int64_t>(header.rows) != entry.rows()) {
      return error("header disagrees with the manifest");
    }
    // Compared as a row count, not a byte size: rows * width may overflow.
    const uint64_t row_bytes = width * sizeof(float);
    const uint64_t room =
        row_bytes == 0 ? 0 : (size - sizeof(header)) / row_bytes;
    if (row_bytes == 0 || header.rows != room ||
        (size - sizeof(header)) % row_bytes != 0) {
      return error(absl::StrCat("header says ", header.rows, " rows of ",
                                row_bytes, " bytes but the file has ", size,
                                " bytes",
                                header.rows > room ? " (truncated)" : ""));
    }
    RETURN_IF_ERROR(VerifySha256(set->mappings_.back().bytes(), entry.sha256(),
                                 absl::StrCat("activation shard ", path),
                                 manifest_path));
    set->shard_starts_.push_back(total);
    set->shard_rows_.push_back(reinterpret_cast<const float*>(
        reinterpret_cast<const char*>(data) + sizeof(header)));
    total += entry.rows();
  }
  if (total != set->manifest_.rows() || total == 0) {
    return absl::DataLossError(absl::StrCat(manifest_path, ": shards hold ",
                                            total, " rows, the manifest says ",
                                            set->manifest_.rows()));
  }
  return set;
}

absl::Status ActivationSet::CheckMadeFrom(
    const std::string& checkpoint_path) const {
  ASSIGN_OR_RETURN(const std::string digest, Sha256OfFile(checkpoint_path));
  if (digest == manifest_.checkpoint_sha256()) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat("activation cache ", manifest_path_,
                   " was made from the checkpoint "
                   "with SHA-256 ",
                   manifest_.checkpoint_sha256().substr(0, 12), "..., not ",
                   checkpoint_path, " (", digest.substr(0, 12), "...)"));
}

absl::Status ActivationSet::CheckSameSiteAs(const ActivationSet& other) const {
  const ActivationManifest& a = manifest_;
  const ActivationManifest& b = other.manifest_;
  auto mismatch = [&](absl::string_view field, const auto& mine,
                      const auto& theirs) {
    return absl::FailedPreconditionError(absl::StrCat(
        "activation caches ", manifest_path_, " and ", other.manifest_path_,
        " are of different sites: ", field, " ", mine, " vs ", theirs));
  };
  if (a.layer() != b.layer()) return mismatch("layer", a.layer(), b.layer());
  if (a.hook_in() != b.hook_in()) {
    return mismatch("hook_in", a.hook_in(), b.hook_in());
  }
  if (a.hook_out() != b.hook_out()) {
    return mismatch("hook_out", a.hook_out(), b.hook_out());
  }
  if (a.d_in() != b.d_in()) return mismatch("d_in", a.d_in(), b.d_in());
  if (a.d_out() != b.d_out()) return mismatch("d_out", a.d_out(), b.d_out());
  if (a.checkpoint_sha256() != b.checkpoint_sha256()) {
    return mismatch("checkpoint_sha256", a.checkpoint_sha256().substr(0, 12),
                    b.checkpoint_sha256().substr(0, 12));
  }
  return absl::OkStatus();
}

absl::Status ActivationSet::CheckSite(int layer, absl::string_view site,
                                      absl::string_view what) const {
  if (manifest_.layer() == layer &&
      absl::StrContains(manifest_.hook_out(), site)) {
    return absl::OkStatus();
  }
  return absl::FailedPreconditionError(
      absl::StrCat("activation cache ", manifest_path_, " caches block ",
                   manifest_.layer(), " (", manifest_.hook_out(), "), but ",
                   what, " is block ", layer, " (", site, ")"));
}

ActivationSet::~ActivationSet() = default;

const float* ActivationSet::Row(int64_t row) const {
  const int shard = static_cast<int>(
      std::upper_bound(shard_starts_.begin(), shard_starts_.end(), row) -
      shard_starts_.begin() - 1);
  return shard_rows_[shard] + (row - shard_starts_[shard]) * (d_in() + d_out());
}

std::pair<torch::Tensor, torch::Tensor> ActivationSet::Gather(
    const std::vector<int64_t>& rows) const {
  const int64_t width = d_in() + d_out();
  torch::Tensor out = torch::empty({static_cast<int64_t>(rows.size()), width});
  float* data = out.data_ptr<float>();
  for (size_t i = 0; i < rows.size(); ++i) {
    TORCH_CHECK(rows[i] >= 0 && rows[i] < this->rows(), "row out of range");
    std::memcpy(data + i * width, Row(rows[i]), width * sizeof(float));
  }
  return {out.slice(1, 0, d_in()).contiguous(),
          out.slice(1, d_in(), width).contiguous()};
}

std::pair<torch::Tensor, torch::Tensor> ActivationSet::Range(
    int64_t begin, int64_t end) const {
  std::vector<int64_t> rows(std::max<int64_t>(0, end - begin));
  std::iota(rows.begin(), rows.end(), begin);
  return Gather(rows);
}

std::pair<torch::Tensor, torch::Tensor> ActivationSet::TrainBatch(
    int64_t step, int64_t batch_size, uint64_t seed, int64_t unit_rows) const {
  const int64_t units = rows() / unit_rows;
  TORCH_CHECK(units > 0, "fewer rows than one unit");
  std::vector<int64_t> batch;
  batch.reserve(batch_size * unit_rows);
  int64_t position = step * batch_size;
  for (int64_t taken = 0; taken < batch_size; ++taken, ++position) {
    const int64_t epoch = position / units;
    if (epoch != permutation_epoch_ || seed != permutation_seed_ ||
        static_cast<int64_t>(permutation_.size()) != units) {
      permutation_.resize(units);
      std::iota(permutation_.begin(), permutation_.end(), 0);
      // Fisher-Yates with an explicit draw, so the order is the same under any
      // standard library.
      std::mt19937_64 generator(seed * 1000003u + epoch);
      for (int64_t i = units - 1; i > 0; --i) {
        std::swap(permutation_[i], permutation_[generator() % (i + 1)]);
      }
      permutation_epoch_ = epoch;
      permutation_seed_ = seed;
    }
    const int64_t unit = permutation_[position % units];
    for (int64_t r = 0; r < unit_rows; ++r) {
      batch.push_back(unit * unit_rows + r);
    }
  }
  return Gather(batch);
}

}  // namespace sparse_layers::datasets
