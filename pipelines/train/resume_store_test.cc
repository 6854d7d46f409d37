#include "pipelines/train/resume_store.h"

#include <pwd.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/common/file_io.h"
#include "gtest/gtest.h"

namespace sparse_layers::train {
namespace {

namespace fs = std::filesystem;

std::string TempDir(const std::string& name) {
  const std::string path = absl::StrCat(std::getenv("TEST_TMPDIR"), "/", name);
  fs::remove_all(path);
  fs::create_directories(path);
  return path;
}

TEST(ResumeStoreTest, HomeIsTheUsersOwnWithoutEnvironment) {
  EXPECT_EQ(ExpandHomeDirectory("/abs/path"), "/abs/path");
  EXPECT_EQ(ExpandHomeDirectory("rel/~/x"), "rel/~/x");
  EXPECT_EQ(ExpandHomeDirectory("~/.cache/r"),
            absl::StrCat(getpwuid(getuid())->pw_dir, "/.cache/r"));
}

TEST(ResumeStoreTest, KeyFollowsExecutableArgumentsAndFileBytes) {
  const std::string dir = TempDir("key");
  const std::string exe = dir + "/exe", config = dir + "/config";
  ASSERT_TRUE(WriteFileAtomically(exe, "binary v1").ok());
  ASSERT_TRUE(WriteFileAtomically(config, "lr: 1").ok());
  const std::string key = *ResumeKey(exe, {"--threads=2"}, {config});
  EXPECT_EQ(key.size(), 64u);
  EXPECT_EQ(*ResumeKey(exe, {"--threads=2"}, {config}), key);

  // The same bytes under another path (another sandbox) give the same key.
  const std::string moved = dir + "/elsewhere";
  ASSERT_TRUE(WriteFileAtomically(moved, "lr: 1").ok());
  EXPECT_EQ(*ResumeKey(exe, {"--threads=2"}, {moved}), key);

  EXPECT_NE(*ResumeKey(exe, {"--threads=1"}, {config}), key);
  // Argument boundaries count: {"ab"} and {"a", "b"} differ.
  EXPECT_NE(*ResumeKey(exe, {"--threads=", "2"}, {config}), key);
  ASSERT_TRUE(WriteFileAtomically(config, "lr: 2").ok());
  EXPECT_NE(*ResumeKey(exe, {"--threads=2"}, {config}), key);
  ASSERT_TRUE(WriteFileAtomically(config, "lr: 1").ok());
  ASSERT_TRUE(WriteFileAtomically(exe, "binary v2").ok());
  EXPECT_NE(*ResumeKey(exe, {"--threads=2"}, {config}), key);

  EXPECT_FALSE(ResumeKey(exe, {}, {dir + "/missing"}).ok());
}

TEST(ResumeStoreTest, EntryIsExclusiveAndRemovedAfterSuccess) {
  const std::string dir = TempDir("entry") + "/store";  // Created on Open.
  absl::StatusOr<ResumeEntry> entry = ResumeEntry::Open(dir, "abc");
  ASSERT_TRUE(entry.ok()) << entry.status();
  EXPECT_EQ(entry->checkpoint_path(), dir + "/abc.pt");
  absl::StatusOr<ResumeEntry> second = ResumeEntry::Open(dir, "abc");
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(ResumeEntry::Open(dir, "other").ok());

  ASSERT_TRUE(WriteFileAtomically(entry->checkpoint_path(), "ckpt").ok());
  EXPECT_EQ(entry->SnapshotPath(1), dir + "/abc.snapshot1");
  ASSERT_TRUE(WriteFileAtomically(entry->SnapshotPath(0), "s0").ok());
  ASSERT_TRUE(WriteFileAtomically(entry->SnapshotPath(1), "s1").ok());
  ASSERT_TRUE(entry->Remove().ok());
  EXPECT_FALSE(fs::exists(dir + "/abc.pt"));
  EXPECT_FALSE(fs::exists(dir + "/abc.snapshot0"));
  EXPECT_FALSE(fs::exists(dir + "/abc.snapshot1"));
  EXPECT_FALSE(fs::exists(dir + "/abc.lock"));
}

TEST(ResumeStoreTest, UnwritableDirectoryIsAnErrorNotACrash) {
  const std::string dir = TempDir("readonly");
  fs::permissions(dir, fs::perms::owner_read | fs::perms::owner_exec);
  if (access(dir.c_str(), W_OK) == 0) GTEST_SKIP() << "root ignores modes";
  EXPECT_EQ(ResumeEntry::Open(dir, "k").status().code(),
            absl::StatusCode::kPermissionDenied);
}

TEST(ResumeStoreTest, CleaningRemovesOldThenOldestBeyondTheSizeButNotLocked) {
  const std::string dir = TempDir("clean");
  const auto age = [&](const std::string& name, int hours) {
    const std::string path = absl::StrCat(dir, "/", name, ".pt");
    EXPECT_TRUE(WriteFileAtomically(path, std::string(100, 'x')).ok());
    fs::last_write_time(
        path, fs::file_time_type::clock::now() - std::chrono::hours(hours));
  };
  age("ancient", 24 * 30);
  age("old", 5);
  age("older", 6);
  age("new", 1);
  age("running", 24 * 30);
  absl::StatusOr<ResumeEntry> running = ResumeEntry::Open(dir, "running");
  ASSERT_TRUE(running.ok());
  fs::last_write_time(dir + "/running.lock", fs::file_time_type::clock::now() -
                                                 std::chrono::hours(24 * 30));
  // A snapshot belongs to its entry: it goes with it and counts in its size
  // (the lock files are empty).
  ASSERT_TRUE(
      WriteFileAtomically(dir + "/ancient.snapshot0", std::string(50, 'x'))
          .ok());
  fs::last_write_time(
      dir + "/ancient.snapshot0",
      fs::file_time_type::clock::now() - std::chrono::hours(24 * 30));

  absl::StatusOr<CleanedEntries> cleaned =
      CleanResumeStore(dir, absl::Hours(24 * 14), 250, absl::Now());
  ASSERT_TRUE(cleaned.ok()) << cleaned.status();
  // "ancient" by age; of the rest, newest first within 250 bytes: "new",
  // "old" fit, "older" does not; "running" stays whatever its age.
  EXPECT_EQ(cleaned->removed, 2);
  EXPECT_FALSE(fs::exists(dir + "/ancient.pt"));
  EXPECT_FALSE(fs::exists(dir + "/ancient.snapshot0"));
  EXPECT_FALSE(fs::exists(dir + "/older.pt"));
  EXPECT_TRUE(fs::exists(dir + "/old.pt"));
  EXPECT_TRUE(fs::exists(dir + "/new.pt"));
  EXPECT_TRUE(fs::exists(dir + "/running.pt"));
  EXPECT_EQ(cleaned->bytes_kept, 300);

  EXPECT_EQ(
      CleanResumeStore(dir + "/none", absl::Hours(1), 1, absl::Now())->removed,
      0);
}

}  // namespace
}  // namespace sparse_layers::train
