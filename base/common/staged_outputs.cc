#include "base/common/staged_outputs.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "base/common/file_io.h"
#include "base/common/status_macros.h"

namespace sparse_layers {
namespace {

absl::Status ErrnoError(absl::string_view what, const std::string& path,
                        int error) {
  return absl::InternalError(
      absl::StrCat(what, " ", path, ": ", std::strerror(error)));
}

// Takes flock(2) on `path`.lock without waiting and writes our pid into it.
// Unlock() removes the file while still holding it, so a lock won on a file
// that was removed meanwhile is retried on the new one: never two holders.
absl::StatusOr<int> Lock(const std::string& path) {
  const std::string lock_path = path + ".lock";
  while (true) {
    const int fd = open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return ErrnoError("cannot write", path, errno);
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int error = errno;
      char holder[32] = {};
      const ssize_t read = pread(fd, holder, sizeof(holder) - 1, 0);
      close(fd);
      if (error != EWOULDBLOCK)
        return ErrnoError("cannot lock", lock_path, error);
      return absl::FailedPreconditionError(absl::StrCat(
          path, " is being written by another run (",
          read > 0 ? absl::StrCat("pid ", absl::StripAsciiWhitespace(holder),
                                  " holds ")
                   : "",
          lock_path, ")"));
    }
    struct stat opened, named;
    if (fstat(fd, &opened) == 0 && stat(lock_path.c_str(), &named) == 0 &&
        opened.st_dev == named.st_dev && opened.st_ino == named.st_ino) {
      const std::string pid = absl::StrCat(getpid(), "\n");
      // The pid only names the holder in the message above.
      if (ftruncate(fd, 0) != 0 || pwrite(fd, pid.data(), pid.size(), 0) < 0) {
      }
      return fd;
    }
    close(fd);
  }
}

void Unlock(const std::string& path, int fd) {
  unlink((path + ".lock").c_str());
  close(fd);
}

// Where Commit() keeps the version an output replaces until all are in place.
std::string Replaced(const std::string& path) {
  return absl::StrCat(path, ".tmp.", getpid(), ".old");
}

}  // namespace

StagedOutputs::~StagedOutputs() {
  std::error_code error;
  for (const Output& output : outputs_) {
    if (!committed_) std::filesystem::remove_all(output.staged, error);
    if (output.lock >= 0) Unlock(output.path, output.lock);
  }
}

absl::StatusOr<std::string> StagedOutputs::StageFile(const std::string& path) {
  return Stage(path, /*directory=*/false);
}

absl::StatusOr<std::string> StagedOutputs::StageDirectory(
    const std::string& path) {
  return Stage(path, /*directory=*/true);
}

absl::Status StagedOutputs::WriteFile(const std::string& path,
                                      absl::string_view contents) {
  ASSIGN_OR_RETURN(const std::string staged, StageFile(path));
  return WriteFileAtomically(staged, contents);
}

absl::StatusOr<std::string> StagedOutputs::Stage(const std::string& path,
                                                 bool directory) {
  if (committed_) {
    return absl::FailedPreconditionError("outputs were already committed");
  }
  if (path.empty())
    return absl::InvalidArgumentError("an output path is empty");
  for (const Output& output : outputs_) {
    if (output.path == path && output.directory == directory) {
      return output.staged;
    }
  }
  std::error_code error;
  const std::filesystem::file_status existing =
      std::filesystem::status(path, error);
  if (std::filesystem::exists(existing) &&
      std::filesystem::is_directory(existing) != directory) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, directory ? " exists and is not a directory"
                                     : " is a directory"));
  }
  ASSIGN_OR_RETURN(const int lock, Lock(path));
  RemoveStaleTemporaries(path);
  Output output{path, absl::StrCat(path, ".tmp.", getpid(), ".staged"),
                directory, lock};
  std::filesystem::remove_all(output.staged, error);
  const int fd = directory
                     ? mkdir(output.staged.c_str(), 0755)
                     : open(output.staged.c_str(),
                            O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int saved = errno;
    Unlock(path, lock);
    return ErrnoError("cannot write", path, saved);
  }
  if (!directory) close(fd);
  outputs_.push_back(std::move(output));
  return outputs_.back().staged;
}

absl::Status StagedOutputs::Commit() {
  if (committed_) {
    return absl::FailedPreconditionError("outputs were already committed");
  }
  std::error_code error;
  std::vector<bool> replaced(outputs_.size(), false);
  absl::Status status;
  size_t done = 0;
  for (; done < outputs_.size(); ++done) {
    const Output& output = outputs_[done];
    const std::string old = Replaced(output.path);
    if (std::filesystem::exists(std::filesystem::symlink_status(output.path))) {
      if (std::rename(output.path.c_str(), old.c_str()) != 0) {
        status = ErrnoError("cannot replace", output.path, errno);
        break;
      }
      replaced[done] = true;
    }
    if (std::rename(output.staged.c_str(), output.path.c_str()) != 0) {
      status = ErrnoError("cannot rename onto", output.path, errno);
      if (replaced[done]) std::rename(old.c_str(), output.path.c_str());
      break;
    }
  }
  if (!status.ok()) {
    // Undo in reverse: the new outputs go, the versions they replaced return.
    for (size_t i = done; i-- > 0;) {
      std::filesystem::remove_all(outputs_[i].path, error);
      if (replaced[i]) {
        std::rename(Replaced(outputs_[i].path).c_str(),
                    outputs_[i].path.c_str());
      }
    }
    return status;
  }
  committed_ = true;
  for (size_t i = 0; i < outputs_.size(); ++i) {
    if (replaced[i])
      std::filesystem::remove_all(Replaced(outputs_[i].path), error);
    Unlock(outputs_[i].path, outputs_[i].lock);
    outputs_[i].lock = -1;
  }
  return absl::OkStatus();
}

}  // namespace sparse_layers
