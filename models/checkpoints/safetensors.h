// The safetensors format (Hugging Face's model.safetensors), read through a
// read-only memory map and written atomically. Only the format: which names a
// model expects and in which shapes is the caller's business.
//
// Layout (huggingface/safetensors README "Format" and
// safetensors/src/tensor.rs): an 8-byte little-endian u64 N, then N bytes of
// UTF-8 JSON that begin with '{' and may be padded at the end with spaces, then
// the data buffer. The JSON maps each tensor name to {"dtype": "F32", "shape":
// [..], "data_offsets": [begin, end]} with offsets relative to the start of the
// buffer, plus an optional
// "__metadata__" object of string -> string. Data is little-endian and
// row-major; the tensors, in offset order, tile the buffer from 0 to its end
// with no hole, gap or overlap (the official reader rejects anything else, and
// so does this one). Empty and 0-rank tensors are allowed. N is at most
// 100,000,000 (the official limit).
//
// Names written by this project (activation caches, fitted layers) follow the
// scheme documented where they are written; this file only stores them.
#ifndef SPARSE_LAYERS_MODELS_CHECKPOINTS_SAFETENSORS_H_
#define SPARSE_LAYERS_MODELS_CHECKPOINTS_SAFETENSORS_H_

#include <torch/torch.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "base/common/mapped_file.h"

namespace sparse_layers::layers {

// One header entry, as validated. `begin` and `end` are offsets into the data
// buffer (not the file).
struct SafetensorsEntry {
  std::string dtype;  // The header's spelling: "F32", "BF16", "I64", ...
  std::vector<int64_t> shape;
  uint64_t begin = 0;
  uint64_t end = 0;
};

// An open .safetensors file. Open() validates the whole header, so every entry
// it lists has a known dtype and a byte range that fits its shape and lies in
// the file; reading a tensor then fails only for a dtype that does not convert
// to float32, a missing name or (with an expected shape) a wrong shape. The
// file stays mapped until the object is destroyed; tensors are copied out, so
// they outlive it. Every error is one line that starts with the path.
class SafetensorsFile {
 public:
  static absl::StatusOr<std::unique_ptr<SafetensorsFile>> Open(
      const std::string& path);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& path() const { return path_; }
  // Tensor names, sorted.
  std::vector<std::string> Names() const;
  bool Contains(const std::string& name) const;
  // The "__metadata__" map (empty when the header has none).
  const std::map<std::string, std::string>& metadata() const {
    return metadata_;
  }

  // NotFound "<path>: tensor '<name>' missing" for an absent name.
  absl::StatusOr<SafetensorsEntry> Entry(const std::string& name) const;
  // OK when `name` exists with exactly `expected` shape; otherwise NotFound
  // (missing) or InvalidArgument "<path>: tensor 'x' has shape [3, 4],
  // expected [4, 3]".
  absl::Status CheckShape(const std::string& name,
                          const std::vector<int64_t>& expected) const;

  // The tensor as a new contiguous CPU float32 tensor: F32 bytes copied out,
  // F16 and BF16 converted exactly (every F16 and BF16 value, subnormals, infs
  // and NaNs included, is a float32). Other dtypes are InvalidArgument
  // "<path>: unsupported dtype 'I8' for tensor 'x' (F32, F16 and BF16 read as
  // float32)".
  absl::StatusOr<torch::Tensor> ReadFloat(const std::string& name) const;
  // ReadFloat after CheckShape.
  absl::StatusOr<torch::Tensor> ReadFloat(
      const std::string& name, const std::vector<int64_t>& expected) const;

 private:
  SafetensorsFile(std::string path, MappedFile mapping, uint64_t data_start)
      : path_(std::move(path)),
        mapping_(std::move(mapping)),
        data_start_(data_start) {}

  absl::Status ParseHeader(uint64_t header_size);

  std::string path_;
  MappedFile mapping_;   // The whole file, read-only.
  uint64_t data_start_;  // 8 + N: where the data buffer starts in the file.
  std::map<std::string, SafetensorsEntry> entries_;
  std::map<std::string, std::string> metadata_;
};

// The bytes of a safetensors file holding `tensors` as F32, laid out as the
// official writer does: entries in name order (all F32, so its dtype-then-name
// order is name order), "__metadata__" first when `metadata` is not empty,
// compact JSON padded with spaces to a multiple of 8 bytes so the data buffer
// starts 8-byte aligned. Tensors must be float32 (any device, any strides);
// names must be non-empty and not "__metadata__".
absl::StatusOr<std::string> SerializeSafetensors(
    const std::map<std::string, torch::Tensor>& tensors,
    const std::map<std::string, std::string>& metadata = {});

// Appends `text` as a JSON string literal, escaped as serde_json escapes
// (safetensors headers; SAELens's cfg.json).
void AppendJsonString(absl::string_view text, std::string* out);

// Writes SerializeSafetensors' bytes to `path` atomically (temporary file and
// rename), streaming the tensors rather than building the file in memory.
absl::Status WriteSafetensors(
    const std::string& path,
    const std::map<std::string, torch::Tensor>& tensors,
    const std::map<std::string, std::string>& metadata = {});

}  // namespace sparse_layers::layers

#endif  // SPARSE_LAYERS_MODELS_CHECKPOINTS_SAFETENSORS_H_
