#include "base/common/cpu_slots.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "base/common/status_macros.h"

ABSL_FLAG(std::string, cpu_slot_dir, "",
          "Take a CPU slot lock here first (build actions; see cpu_slots.h)");

namespace sparse_layers {

absl::Status AcquireCpuSlotIfRequested(int threads) {
  const std::string directory = absl::GetFlag(FLAGS_cpu_slot_dir);
  if (directory.empty()) return absl::OkStatus();
  return AcquireCpuSlot(directory, threads);
}

absl::StatusOr<std::vector<int>> TryLockCores(const std::string& directory,
                                              int threads, int cores) {
  const int wanted = std::clamp(threads, 1, std::max(1, cores));
  std::vector<int> held;
  for (int core = 0; core < cores && int(held.size()) < wanted; ++core) {
    const std::string path = absl::StrCat(directory, "/core", core, ".lock");
    const int fd = open(path.c_str(), O_RDWR | O_CREAT, 0666);
    if (fd < 0) {
      for (int h : held) close(h);
      return absl::InternalError(
          absl::StrCat("cannot open ", path, ": ", std::strerror(errno)));
    }
    if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
      held.push_back(fd);
    } else {
      close(fd);
    }
  }
  if (int(held.size()) < wanted) {
    // All or nothing: holding a part while waiting could deadlock two actions.
    for (int h : held) close(h);
    held.clear();
  }
  return held;
}

absl::Status AcquireCpuSlot(const std::string& directory, int threads) {
  std::error_code error;
  std::filesystem::create_directories(directory, error);
  if (error) {
    return absl::InternalError(
        absl::StrCat("cannot create ", directory, ": ", error.message()));
  }
  const int cores = std::max(1u, std::thread::hardware_concurrency());
  bool announced = false;
  while (true) {
    ASSIGN_OR_RETURN(const std::vector<int> held,
                     TryLockCores(directory, threads, cores));
    if (!held.empty()) return absl::OkStatus();  // Held until exit.
    if (!announced) {
      std::fprintf(stderr, "waiting for %d of %d cores in %s\n",
                   std::min(threads, cores), cores, directory.c_str());
      announced = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
}

}  // namespace sparse_layers
