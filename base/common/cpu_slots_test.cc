#include "base/common/cpu_slots.h"

#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace sparse_layers {
namespace {

std::string TempDirectory() {
  std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/slotsXXXXXX";
  EXPECT_NE(mkdtemp(path.data()), nullptr);
  return path;
}

void Release(const std::vector<int>& held) {
  for (int fd : held) close(fd);
}

TEST(CpuSlotsTest, TwoOneThreadActionsShareTwoCores) {
  const std::string directory = TempDirectory();
  const std::vector<int> first = *TryLockCores(directory, 1, 2);
  const std::vector<int> second = *TryLockCores(directory, 1, 2);
  EXPECT_EQ(first.size(), 1u);
  EXPECT_EQ(second.size(), 1u);
  EXPECT_TRUE(TryLockCores(directory, 1, 2)->empty());
  Release(first);
  Release(second);
}

TEST(CpuSlotsTest, TwoThreadsWaitWhileOneCoreIsTaken) {
  const std::string directory = TempDirectory();
  const std::vector<int> one = *TryLockCores(directory, 1, 2);
  ASSERT_EQ(one.size(), 1u);
  // The old one-slot-per-two-threads scheme let a 2-thread action start here:
  // 3 threads on 2 cores.
  EXPECT_TRUE(TryLockCores(directory, 2, 2)->empty());
  // Nothing was kept by the failed attempt: the other core is still free.
  const std::vector<int> other = *TryLockCores(directory, 1, 2);
  EXPECT_EQ(other.size(), 1u);
  Release(one);
  Release(other);
  const std::vector<int> both = *TryLockCores(directory, 2, 2);
  EXPECT_EQ(both.size(), 2u);
  EXPECT_TRUE(TryLockCores(directory, 1, 2)->empty());
  Release(both);
}

TEST(CpuSlotsTest, MoreThreadsThanCoresTakeEveryCore) {
  const std::string directory = TempDirectory();
  const std::vector<int> all = *TryLockCores(directory, 8, 2);
  EXPECT_EQ(all.size(), 2u);
  Release(all);
}

TEST(CpuSlotsTest, AnUnwritableDirectoryIsAnError) {
  EXPECT_FALSE(TryLockCores("/nonexistent/slots", 1, 2).ok());
}

}  // namespace
}  // namespace sparse_layers
