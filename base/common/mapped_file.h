// A whole file memory-mapped read-only: the one open/fstat/mmap of the project
// (token shards, activation shards and safetensors read through it), so every
// reader reports an unreadable file the same way and never leaks a mapping.
#ifndef SPARSE_LAYERS_BASE_COMMON_MAPPED_FILE_H_
#define SPARSE_LAYERS_BASE_COMMON_MAPPED_FILE_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace sparse_layers {

class MappedFile {
 public:
  // NotFoundError ("<path>: cannot open: <reason>") when the file cannot be
  // opened; DataLossError when it cannot be mapped. An empty file maps to
  // size() == 0 (mmap refuses length 0).
  static absl::StatusOr<MappedFile> Open(const std::string& path);

  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  absl::string_view bytes() const {
    return absl::string_view(reinterpret_cast<const char*>(data_), size_);
  }

 private:
  MappedFile(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  void Unmap();

  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace sparse_layers

#endif  // SPARSE_LAYERS_BASE_COMMON_MAPPED_FILE_H_
