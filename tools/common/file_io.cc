#include "tools/common/file_io.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace sparse_layers {
namespace {

absl::Status ErrnoError(absl::string_view what, const std::string& path) {
  return absl::InternalError(
      absl::StrCat(what, " ", path, ": ", std::strerror(errno)));
}

}  // namespace

absl::StatusOr<std::string> ReadFileToString(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  std::ostringstream contents;
  contents << in.rdbuf();
  if (in.bad()) return absl::DataLossError(absl::StrCat("cannot read ", path));
  return contents.str();
}

absl::Status WriteFileAtomically(const std::string& path,
                                 absl::string_view contents) {
  absl::StatusOr<std::unique_ptr<AtomicFileWriter>> writer =
      AtomicFileWriter::Open(path);
  if (!writer.ok()) return writer.status();
  if (absl::Status status = (*writer)->Append(contents); !status.ok()) {
    return status;
  }
  return (*writer)->Commit();
}

absl::StatusOr<std::unique_ptr<AtomicFileWriter>> AtomicFileWriter::Open(
    const std::string& path) {
  std::string temporary = absl::StrCat(path, ".tmp.", getpid());
  std::FILE* file = std::fopen(temporary.c_str(), "wb");
  if (file == nullptr) return ErrnoError("cannot create", temporary);
  return std::unique_ptr<AtomicFileWriter>(
      new AtomicFileWriter(path, std::move(temporary), file));
}

AtomicFileWriter::~AtomicFileWriter() {
  if (file_ != nullptr) {
    std::fclose(file_);
    std::remove(temporary_.c_str());
  }
}

absl::Status AtomicFileWriter::Append(absl::string_view bytes) {
  if (file_ == nullptr) return absl::FailedPreconditionError("writer closed");
  if (std::fwrite(bytes.data(), 1, bytes.size(), file_) != bytes.size()) {
    return ErrnoError("cannot write", temporary_);
  }
  return absl::OkStatus();
}

absl::Status AtomicFileWriter::Commit() {
  if (file_ == nullptr) return absl::FailedPreconditionError("writer closed");
  // fsync before rename: a crash must leave either the old file or the new one.
  const bool flushed = std::fflush(file_) == 0 && fsync(fileno(file_)) == 0;
  const bool closed = std::fclose(file_) == 0;
  file_ = nullptr;
  if (!flushed || !closed) {
    std::remove(temporary_.c_str());
    return ErrnoError("cannot flush", temporary_);
  }
  if (std::rename(temporary_.c_str(), path_.c_str()) != 0) {
    std::remove(temporary_.c_str());
    return ErrnoError("cannot rename onto", path_);
  }
  return absl::OkStatus();
}

}  // namespace sparse_layers
