#include "base/common/main.h"

#include <torch/torch.h>

#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

ABSL_FLAG(int, test_count, 1, "A numeric flag under test");
ABSL_FLAG(double, test_share, 0.5, "A fractional flag under test");
ABSL_FLAG(std::string, test_path, "", "A file flag under test");
ABSL_FLAG(std::vector<std::string>, test_paths, {}, "A list flag under test");

namespace sparse_layers {
namespace {

using ::testing::HasSubstr;

// RunMain's exit code and what it printed on stderr.
std::pair<int, std::string> Capture(absl::FunctionRef<absl::Status()> body) {
  testing::internal::CaptureStderr();
  const int code = RunMain(body);
  return {code, testing::internal::GetCapturedStderr()};
}

class RunMainTest : public testing::Test {
 protected:
  void SetUp() override { SetProgramName("/some/dir/tool"); }
};

TEST_F(RunMainTest, OkIsZeroAndSilent) {
  EXPECT_EQ(Capture([] { return absl::OkStatus(); }),
            std::make_pair(0, std::string()));
}

TEST_F(RunMainTest, StatusIsOneLine) {
  EXPECT_EQ(Capture([] { return absl::NotFoundError("no such file\nsecond"); }),
            std::make_pair(1, std::string("tool: error: no such file\n")));
}

TEST_F(RunMainTest, C10ErrorIsItsFirstLineWithoutBacktrace) {
  const auto [code, err] = Capture([]() -> absl::Status {
    TORCH_CHECK(false, "top_k must be positive");
    return absl::OkStatus();
  });
  EXPECT_EQ(code, 1);
  EXPECT_EQ(err, "tool: error: top_k must be positive\n");
}

TEST_F(RunMainTest, StdAndUnknownExceptionsAreOneLine) {
  EXPECT_EQ(
      Capture([]() -> absl::Status { throw std::length_error("too long"); }),
      std::make_pair(1, std::string("tool: error: too long\n")));
  EXPECT_EQ(Capture([]() -> absl::Status { throw 7; }),
            std::make_pair(1, std::string("tool: error: unknown exception\n")));
}

TEST_F(RunMainTest, ExceptionInAnotherThreadExitsWithOneLine) {
  EXPECT_EXIT(
      RunMain([] {
        std::thread([] { throw std::runtime_error("worker died"); }).join();
        return absl::OkStatus();
      }),
      testing::ExitedWithCode(1), "^tool: error: worker died\n$");
}

TEST(FlagChecksTest, RangesNameTheFlag) {
  absl::SetFlag(&FLAGS_test_count, 0);
  EXPECT_EQ(FlagAtLeast(FLAGS_test_count, 1).message(),
            "--test_count must be >= 1, got 0");
  EXPECT_TRUE(FlagAtLeast(FLAGS_test_count, 0).ok());
  absl::SetFlag(&FLAGS_test_share, std::nan(""));
  EXPECT_EQ(FlagInRange(FLAGS_test_share, 0.0, 1.0).message(),
            "--test_share must be in [0, 1], got nan");
  absl::SetFlag(&FLAGS_test_share, 1.0);
  EXPECT_TRUE(FlagInRange(FLAGS_test_share, 0.0, 1.0).ok());
  EXPECT_EQ(FirstError({absl::OkStatus(), FlagAtLeast(FLAGS_test_count, 1),
                        absl::InternalError("later")})
                .message(),
            "--test_count must be >= 1, got 0");
}

TEST(FlagChecksTest, RequiredAndFiles) {
  EXPECT_EQ(RequiredFlag(FLAGS_test_path).message(), "--test_path is required");
  EXPECT_TRUE(FlagFilesExist(FLAGS_test_path).ok());  // Unset passes.
  const std::string dir = std::getenv("TEST_TMPDIR");
  const std::string file = dir + "/present.txt";
  std::ofstream(file) << "x";
  absl::SetFlag(&FLAGS_test_path, file);
  EXPECT_TRUE(RequiredFlag(FLAGS_test_path).ok());
  EXPECT_TRUE(FlagFilesExist(FLAGS_test_path).ok());
  EXPECT_TRUE(RequiredFile(FLAGS_test_path).ok());
  absl::SetFlag(&FLAGS_test_paths, std::vector<std::string>{file, dir});
  EXPECT_THAT(
      FlagFilesExist(FLAGS_test_paths).message(),
      HasSubstr("--test_paths: " + dir + " is a directory, not a file"));
}

}  // namespace
}  // namespace sparse_layers
