#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/common/digest.h"
#include "base/common/file_io.h"
#include "base/common/json_object.h"
#include "base/common/mapped_file.h"
#include "base/common/output_paths.h"
#include "base/common/staged_outputs.h"
#include "gtest/gtest.h"

namespace sparse_layers {
namespace {

// FIPS 180-2 test vectors.
TEST(Sha256Test, KnownVectors) {
  EXPECT_EQ(Sha256Hex(""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  Sha256 incremental;
  incremental.Update("a");
  incremental.Update("bc");
  EXPECT_EQ(incremental.HexDigest(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(FileIoTest, AtomicWriteRoundTripsAndUncommittedLeavesNothing) {
  const std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/f.bin";
  ASSERT_TRUE(WriteFileAtomically(path, std::string("x\0y", 3)).ok());
  EXPECT_EQ(*ReadFileToString(path), std::string("x\0y", 3));
  EXPECT_EQ(*Sha256OfFile(path), Sha256Hex(std::string("x\0y", 3)));

  const std::string other = path + ".2";
  {
    auto writer = AtomicFileWriter::Open(other);
    ASSERT_TRUE(writer.ok());
    ASSERT_TRUE((*writer)->Append("partial").ok());
  }  // Not committed: neither the file nor its temporary remains.
  EXPECT_FALSE(ReadFileToString(other).ok());
  EXPECT_EQ(ReadFileToString(path + ".missing").status().code(),
            absl::StatusCode::kNotFound);
}

// A fresh directory under TEST_TMPDIR.
std::string TestDir(const std::string& name) {
  const std::string dir = std::string(std::getenv("TEST_TMPDIR")) + "/" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// The names in `dir`, sorted, joined by spaces.
std::string Listing(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  std::string joined;
  for (const std::string& name : names) absl::StrAppend(&joined, " ", name);
  return joined;
}

// A pid that no process holds: a child's, after it exited and was reaped.
pid_t DeadPid() {
  const pid_t child = fork();
  if (child == 0) _exit(0);
  waitpid(child, nullptr, 0);
  return child;
}

TEST(FileIoTest, WriteRemovesStaleTemporariesOfDeadProcessesOnly) {
  const std::string dir = TestDir("stale");
  const std::string path = dir + "/model.pt";
  const std::string dead = absl::StrCat(path, ".tmp.", DeadPid());
  const std::string live = absl::StrCat(path, ".tmp.", getppid());
  for (const std::string& file : {dead, live, dead + ".staged"}) {
    ASSERT_TRUE(WriteFileAtomically(file, "killed mid-write").ok());
  }
  std::filesystem::create_directories(dead + ".old/shard");
  ASSERT_TRUE(WriteFileAtomically(path, "new").ok());
  EXPECT_EQ(Listing(dir), absl::StrCat(" model.pt model.pt.tmp.", getppid()));
}

TEST(JsonObjectTest, ParsesObjectsAndNamesBadFilesInOneLine) {
  absl::StatusOr<google::protobuf::Struct> object =
      ParseJsonObject(R"({"d_in": 4, "name": "x"})");
  ASSERT_TRUE(object.ok()) << object.status();
  EXPECT_EQ(object->fields().at("d_in").number_value(), 4);
  EXPECT_FALSE(ParseJsonObject("[1, 2]").ok());
  const std::string path = ::testing::TempDir() + "/bad.json";
  ASSERT_TRUE(WriteFileAtomically(path, "{\"d_in\": 4,\n\"x\"\n}").ok());
  const absl::Status bad = ReadJsonObject(path).status();
  EXPECT_TRUE(absl::StartsWith(bad.message(), path + ": not valid JSON: "));
  EXPECT_EQ(std::string(bad.message()).find('\n'), std::string::npos);
  EXPECT_TRUE(absl::StrContains(
      ReadJsonObject(path + ".absent").status().message(), path + ".absent"));
}

TEST(MappedFileTest, MapsBytesEmptyFilesAndNamesUnreadablePaths) {
  const std::string dir = ::testing::TempDir();
  const std::string path = absl::StrCat(dir, "/mapped.bin");
  ASSERT_TRUE(WriteFileAtomically(path, std::string("ab\0c", 4)).ok());
  absl::StatusOr<MappedFile> file = MappedFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->bytes(), std::string("ab\0c", 4));
  MappedFile moved = std::move(*file);
  EXPECT_EQ(moved.size(), 4u);
  EXPECT_EQ(file->size(), 0u);  // NOLINT: a moved-from file is empty.

  ASSERT_TRUE(WriteFileAtomically(path, "").ok());
  absl::StatusOr<MappedFile> empty = MappedFile::Open(path);
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->size(), 0u);

  absl::StatusOr<MappedFile> missing = MappedFile::Open(path + ".absent");
  EXPECT_TRUE(absl::IsNotFound(missing.status()));
  EXPECT_TRUE(absl::StartsWith(missing.status().message(),
                               absl::StrCat(path, ".absent: cannot open: ")));
  absl::StatusOr<MappedFile> directory = MappedFile::Open(dir);
  EXPECT_EQ(directory.status().message(),
            absl::StrCat(dir, ": not a regular file"));
}

TEST(OutputPathsTest, AnOutputNamingAnInputIsRefusedHoweverSpelled) {
  const std::string dir = ::testing::TempDir();
  const std::string input = absl::StrCat(dir, "/in.pt");
  ASSERT_TRUE(WriteFileAtomically(input, "x").ok());
  std::filesystem::remove(dir + "/link.pt");
  std::filesystem::create_symlink(input, dir + "/link.pt");
  EXPECT_TRUE(OutputIsNotAnInput("--out", dir + "/out.pt", {input, ""}).ok());
  EXPECT_TRUE(OutputIsNotAnInput("--out", "", {input}).ok());
  for (const std::string& same :
       {input, dir + "/./in.pt", dir + "/sub/../in.pt", dir + "/link.pt"}) {
    EXPECT_EQ(OutputIsNotAnInput("--out", same, {"", input}).message(),
              absl::StrCat("--out ", same, " is also an input (", input,
                           "); write it elsewhere"))
        << same;
  }
}

TEST(StagedOutputsTest, CommitRenamesEveryOutputIntoPlace) {
  const std::string dir = TestDir("commit");
  ASSERT_TRUE(WriteFileAtomically(dir + "/b.txt", "old b").ok());
  std::filesystem::create_directories(dir + "/shards/stale_shard");
  StagedOutputs outputs;
  auto shards = outputs.StageDirectory(dir + "/shards");
  ASSERT_TRUE(shards.ok()) << shards.status();
  ASSERT_TRUE(WriteFileAtomically(*shards + "/s0.bin", "s0").ok());
  ASSERT_TRUE(outputs.WriteFile(dir + "/a.txt", "a").ok());
  ASSERT_TRUE(outputs.WriteFile(dir + "/b.txt", "b").ok());
  // Nothing appears before the commit.
  EXPECT_FALSE(std::filesystem::exists(dir + "/a.txt"));
  EXPECT_EQ(*ReadFileToString(dir + "/b.txt"), "old b");
  ASSERT_TRUE(outputs.Commit().ok());
  EXPECT_EQ(*ReadFileToString(dir + "/a.txt"), "a");
  EXPECT_EQ(*ReadFileToString(dir + "/b.txt"), "b");
  EXPECT_EQ(Listing(dir + "/shards"), " s0.bin");
  EXPECT_EQ(Listing(dir), " a.txt b.txt shards");  // No temporary, no lock.
}

TEST(StagedOutputsTest, WriteFilesAndCommitWritesEveryFileOrNone) {
  const std::string dir = TestDir("files");
  ASSERT_TRUE(StagedOutputs()
                  .WriteFilesAndCommit(dir, {{"a.csv", "a"}, {"b.txt", "b"}})
                  .ok());
  EXPECT_EQ(*ReadFileToString(dir + "/a.csv"), "a");
  EXPECT_EQ(*ReadFileToString(dir + "/b.txt"), "b");
  // The second file cannot be staged (no such folder): the first stays old.
  const absl::Status status = StagedOutputs().WriteFilesAndCommit(
      dir, {{"a.csv", "new a"}, {"missing/c.csv", "c"}});
  EXPECT_FALSE(status.ok());
  EXPECT_TRUE(absl::StrContains(status.message(), "c.csv")) << status;
  EXPECT_EQ(*ReadFileToString(dir + "/a.csv"), "a");
  EXPECT_EQ(Listing(dir), " a.csv b.txt");
}

TEST(StagedOutputsTest, FailureOrAbandonLeavesNothingNew) {
  const std::string dir = TestDir("abandon");
  ASSERT_TRUE(WriteFileAtomically(dir + "/a.txt", "old a").ok());
  {
    StagedOutputs outputs;
    ASSERT_TRUE(outputs.WriteFile(dir + "/a.txt", "new a").ok());
    auto shards = outputs.StageDirectory(dir + "/shards");
    ASSERT_TRUE(shards.ok());
    ASSERT_TRUE(WriteFileAtomically(*shards + "/s0.bin", "s0").ok());
    ASSERT_TRUE(outputs.WriteFile(dir + "/b.txt", "b").ok());
    // The last rename fails (its staged file vanished): a.txt and shards/,
    // already renamed, are undone.
    std::filesystem::remove(
        absl::StrCat(dir, "/b.txt.tmp.", getpid(), ".staged"));
    const absl::Status status = outputs.Commit();
    EXPECT_FALSE(status.ok());
    EXPECT_TRUE(absl::StrContains(status.message(), "b.txt")) << status;
  }
  EXPECT_EQ(Listing(dir), " a.txt");
  EXPECT_EQ(*ReadFileToString(dir + "/a.txt"), "old a");
  {
    StagedOutputs outputs;  // Destroyed without Commit(): a failed run.
    ASSERT_TRUE(outputs.WriteFile(dir + "/c.txt", "c").ok());
    ASSERT_TRUE(outputs.StageDirectory(dir + "/shards").ok());
  }
  EXPECT_EQ(Listing(dir), " a.txt");
}

TEST(StagedOutputsTest, SecondWriterOfAnOutputFailsAtOnce) {
  const std::string dir = TestDir("lock");
  auto first = std::make_unique<StagedOutputs>();
  ASSERT_TRUE(first->StageFile(dir + "/model.pt").ok());
  StagedOutputs second;
  const absl::StatusOr<std::string> refused =
      second.StageFile(dir + "/model.pt");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().message(),
            absl::StrCat(dir, "/model.pt is being written by another run (pid ",
                         getpid(), " holds ", dir, "/model.pt.lock)"));
  first.reset();  // Released: the output is free again, and no lock remains.
  EXPECT_EQ(Listing(dir), "");
  EXPECT_TRUE(second.StageFile(dir + "/model.pt").ok());
}

TEST(StagedOutputsTest, UnwritablePathsFailWhenStaged) {
  const std::string dir = TestDir("unwritable");
  StagedOutputs outputs;
  EXPECT_FALSE(outputs.StageFile(dir + "/missing/summary.textproto").ok());
  EXPECT_FALSE(outputs.StageFile(dir).ok());  // A directory, not a file.
  EXPECT_EQ(Listing(dir), "");
}

}  // namespace
}  // namespace sparse_layers
