#include "pipelines/train/resume_store.h"

#include <fcntl.h>
#include <pwd.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/common/digest.h"
#include "base/common/status_macros.h"

namespace sparse_layers::train {
namespace {

namespace fs = std::filesystem;

constexpr char kCheckpointExtension[] = ".pt";
constexpr char kLockExtension[] = ".lock";

// Opens and locks `path` without waiting; -1 and errno when it cannot.
int TryLock(const std::string& path) {
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return -1;
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int saved = errno;
    close(fd);
    errno = saved;
    return -1;
  }
  return fd;
}

void Unlock(int fd) {
  if (fd >= 0) close(fd);  // Closing releases the flock.
}

}  // namespace

std::string ExpandHomeDirectory(const std::string& path) {
  if (!absl::StartsWith(path, "~/")) return path;
  const passwd* user = getpwuid(getuid());
  if (user == nullptr || user->pw_dir == nullptr) return path;
  return absl::StrCat(user->pw_dir, path.substr(1));
}

absl::StatusOr<std::string> ResumeKey(const std::string& executable,
                                      const std::vector<std::string>& arguments,
                                      const std::vector<std::string>& files) {
  Sha256 key;
  ASSIGN_OR_RETURN(const std::string executable_digest,
                   Sha256OfFile(executable));
  key.Update(absl::StrCat("executable ", executable_digest, "\n"));
  // Length-prefixed, so no two argument lists hash alike by concatenation.
  for (const std::string& argument : arguments) {
    key.Update(absl::StrCat("argument ", argument.size(), " ", argument, "\n"));
  }
  for (const std::string& file : files) {
    ASSIGN_OR_RETURN(const std::string digest, Sha256OfFile(file));
    key.Update(absl::StrCat("file ", digest, "\n"));
  }
  return key.HexDigest();
}

absl::StatusOr<ResumeEntry> ResumeEntry::Open(const std::string& directory,
                                              const std::string& key) {
  std::error_code error;
  fs::create_directories(directory, error);
  if (error) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot create the resume directory ", directory, ": ",
                     error.message()));
  }
  const std::string base = absl::StrCat(directory, "/", key);
  const std::string lock_path = base + kLockExtension;
  const int fd = TryLock(lock_path);
  if (fd < 0) {
    return errno == EWOULDBLOCK
               ? absl::UnavailableError(absl::StrCat(
                     lock_path, " is held by another run of this action"))
               : absl::PermissionDeniedError(
                     absl::StrCat("cannot write the resume directory ",
                                  directory, ": ", std::strerror(errno)));
  }
  return ResumeEntry(base, base + kCheckpointExtension, lock_path, fd);
}

ResumeEntry::ResumeEntry(ResumeEntry&& other) noexcept
    : base_(std::move(other.base_)),
      checkpoint_path_(std::move(other.checkpoint_path_)),
      lock_path_(std::move(other.lock_path_)),
      lock_fd_(std::exchange(other.lock_fd_, -1)) {}

ResumeEntry::~ResumeEntry() { Unlock(lock_fd_); }

std::string ResumeEntry::SnapshotPath(int index) const {
  return absl::StrCat(base_, ".snapshot", index);
}

absl::Status ResumeEntry::Remove() {
  std::error_code error;
  fs::remove(checkpoint_path_, error);
  if (error) {
    return absl::InternalError(absl::StrCat("cannot remove ", checkpoint_path_,
                                            ": ", error.message()));
  }
  for (int index = 0; fs::remove(SnapshotPath(index), error); ++index) {
  }
  // The lock file goes too, while still held: a waiting run then finds no
  // checkpoint, which is right, as the outputs now exist.
  fs::remove(lock_path_, error);
  return absl::OkStatus();
}

absl::StatusOr<CleanedEntries> CleanResumeStore(const std::string& directory,
                                                absl::Duration max_age,
                                                int64_t max_bytes,
                                                absl::Time now) {
  // An entry is every file named <key>.*: checkpoint, snapshots and lock.
  struct Entry {
    std::vector<std::string> files;
    std::string lock;
    absl::Time modified = absl::InfinitePast();
    int64_t bytes = 0;
  };
  std::map<std::string, Entry> by_key;
  std::error_code error;
  fs::directory_iterator it(directory, error);
  if (error) {
    if (error == std::errc::no_such_file_or_directory) return CleanedEntries{};
    return absl::InternalError(
        absl::StrCat("cannot list ", directory, ": ", error.message()));
  }
  for (const fs::directory_entry& file : it) {
    const std::string name = file.path().filename().string();
    const size_t dot = name.find('.');
    if (dot == std::string::npos || dot == 0 || !file.is_regular_file(error)) {
      continue;
    }
    const auto modified = fs::last_write_time(file.path(), error);
    const auto bytes = fs::file_size(file.path(), error);
    if (error) continue;  // Removed by its own run meanwhile.
    const auto since_epoch =
        std::chrono::time_point_cast<std::chrono::nanoseconds>(
            modified - fs::file_time_type::clock::now() +
            std::chrono::system_clock::now())
            .time_since_epoch();
    Entry& entry = by_key[name.substr(0, dot)];
    entry.files.push_back(file.path().string());
    entry.lock =
        absl::StrCat(directory, "/", name.substr(0, dot), kLockExtension);
    entry.modified =
        std::max(entry.modified, absl::FromUnixNanos(since_epoch.count()));
    entry.bytes += static_cast<int64_t>(bytes);
  }
  std::vector<Entry> entries;
  for (auto& [key, entry] : by_key) entries.push_back(std::move(entry));
  // Newest first: what is kept when space runs out is the latest work.
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.modified > b.modified;
  });
  CleanedEntries cleaned;
  for (const Entry& entry : entries) {
    const bool too_old = now - entry.modified > max_age;
    const bool too_big = cleaned.bytes_kept + entry.bytes > max_bytes;
    if (!too_old && !too_big) {
      cleaned.bytes_kept += entry.bytes;
      continue;
    }
    const int fd = TryLock(entry.lock);
    if (fd < 0) {  // A running action's: it stays.
      cleaned.bytes_kept += entry.bytes;
      continue;
    }
    for (const std::string& file : entry.files) fs::remove(file, error);
    fs::remove(entry.lock, error);
    Unlock(fd);
    ++cleaned.removed;
  }
  return cleaned;
}

std::optional<ResumeEntry> OpenResumeEntry(
    const std::string& directory, const std::string& executable,
    const std::vector<std::string>& arguments,
    const std::vector<std::string>& files) {
  const std::string store = ExpandHomeDirectory(directory);
  absl::StatusOr<std::string> key = ResumeKey(executable, arguments, files);
  absl::StatusOr<ResumeEntry> entry =
      key.ok() ? ResumeEntry::Open(store, *key) : key.status();
  if (!entry.ok()) {
    std::fprintf(stderr, "train: not resumable: %s\n",
                 std::string(entry.status().message()).c_str());
    return std::nullopt;
  }
  absl::StatusOr<CleanedEntries> cleaned = CleanResumeStore(
      store, kResumeEntryMaxAge, kResumeStoreMaxBytes, absl::Now());
  if (!cleaned.ok()) {
    std::fprintf(stderr, "train: resume store not cleaned: %s\n",
                 std::string(cleaned.status().message()).c_str());
  }
  return std::move(*entry);
}

}  // namespace sparse_layers::train
