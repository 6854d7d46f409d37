#include <cstdlib>
#include <string>

#include "gtest/gtest.h"
#include "tools/common/digest.h"
#include "tools/common/file_io.h"

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

}  // namespace
}  // namespace sparse_layers
