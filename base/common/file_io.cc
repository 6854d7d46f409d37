#include "base/common/file_io.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "base/common/status_macros.h"

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

void RemoveStaleTemporaries(const std::string& path) {
  const std::filesystem::path target(path);
  const std::filesystem::path dir =
      target.has_parent_path() ? target.parent_path() : ".";
  const std::string prefix = target.filename().string() + ".tmp.";
  std::vector<std::filesystem::path> stale;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    const std::string name = entry.path().filename().string();
    if (!absl::StartsWith(name, prefix)) continue;
    const absl::string_view rest =
        absl::string_view(name).substr(prefix.size());
    const size_t end = std::min(rest.find('.'), rest.size());
    pid_t pid = 0;
    if (!absl::SimpleAtoi(rest.substr(0, end), &pid) || pid <= 0) continue;
    // kill(pid, 0) fails with ESRCH only when no such process exists.
    if (pid != getpid() && kill(pid, 0) != 0 && errno == ESRCH) {
      stale.push_back(entry.path());
    }
  }
  for (const auto& file : stale) std::filesystem::remove_all(file, error);
}

absl::Status WriteFileAtomically(const std::string& path,
                                 absl::string_view contents) {
  ASSIGN_OR_RETURN(std::unique_ptr<AtomicFileWriter> writer,
                   AtomicFileWriter::Open(path));
  RETURN_IF_ERROR(writer->Append(contents));
  return writer->Commit();
}

absl::StatusOr<std::unique_ptr<AtomicFileWriter>> AtomicFileWriter::Open(
    const std::string& path) {
  RemoveStaleTemporaries(path);
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
