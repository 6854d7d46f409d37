#include "base/common/cpu_slots.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <thread>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"

ABSL_FLAG(std::string, cpu_slot_dir, "",
          "Take a CPU slot lock here first (build actions; see cpu_slots.h)");

namespace sparse_layers {

absl::Status AcquireCpuSlotIfRequested(int threads) {
  const std::string directory = absl::GetFlag(FLAGS_cpu_slot_dir);
  if (directory.empty()) return absl::OkStatus();
  return AcquireCpuSlot(directory, threads);
}

absl::Status AcquireCpuSlot(const std::string& directory, int threads) {
  std::error_code error;
  std::filesystem::create_directories(directory, error);
  if (error) {
    return absl::InternalError(
        absl::StrCat("cannot create ", directory, ": ", error.message()));
  }
  const int cores = std::max(1u, std::thread::hardware_concurrency());
  const int slots = std::max(1, cores / std::max(1, threads));
  bool announced = false;
  while (true) {
    for (int slot = 0; slot < slots; ++slot) {
      const std::string path = absl::StrCat(directory, "/slot", slot, ".lock");
      const int fd = open(path.c_str(), O_RDWR | O_CREAT, 0666);
      if (fd < 0) {
        return absl::InternalError(
            absl::StrCat("cannot open ", path, ": ", std::strerror(errno)));
      }
      if (flock(fd, LOCK_EX | LOCK_NB) == 0)
        return absl::OkStatus();  // Held until exit.
      close(fd);
    }
    if (!announced) {
      std::fprintf(stderr, "waiting for a CPU slot (%d of %d threads) in %s\n",
                   slots, cores, directory.c_str());
      announced = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
}

}  // namespace sparse_layers
