#include "models/checkpoints/checkpoint.h"

#include <torch/torch.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include "base/common/file_io.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sparse_layers::layers {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

class CheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = std::string(std::getenv("TEST_TMPDIR")) + "/" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name() +
            ".pt";
    torch::NoGradGuard no_grad;
    saved_->weight.fill_(0.5);
    CheckpointState state;
    state.step = 3;
    state.config_text = "name: \"x\"";
    state.log_csv = "step\n";
    ASSERT_TRUE(SaveCheckpoint(path_, *saved_, nullptr, state).ok());
  }

  absl::Status Load() {
    return LoadCheckpoint(path_, *loaded_, nullptr).status();
  }

  std::string path_;
  torch::nn::Linear saved_{torch::nn::LinearOptions(64, 64).bias(false)};
  torch::nn::Linear loaded_{torch::nn::LinearOptions(64, 64).bias(false)};
};

TEST_F(CheckpointTest, RoundTrips) {
  ASSERT_TRUE(Load().ok()) << Load();
  EXPECT_TRUE(torch::equal(saved_->weight, loaded_->weight));
}

TEST_F(CheckpointTest, EditedWeightByteIsCaught) {
  std::string bytes = *ReadFileToString(path_);
  const float half = 0.5f;
  const size_t at =
      bytes.find(std::string(reinterpret_cast<const char*>(&half), 4));
  ASSERT_NE(at, std::string::npos);
  bytes[at + 1] = 0x10;  // 0.5 -> 0.50049: still a valid float and pickle.
  ASSERT_TRUE(WriteFileAtomically(path_, bytes).ok());
  const absl::Status status = Load();
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(status.message()),
              StartsWith("checkpoint " + path_ + ": content SHA-256 "));
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("recorded inside it (the file changed after it was "
                        "written)"));
  EXPECT_FALSE(ReadCheckpointConfig(path_).ok());
}

TEST_F(CheckpointTest, TruncatedFileIsCaught) {
  std::filesystem::resize_file(path_, std::filesystem::file_size(path_) / 2);
  const absl::Status status = Load();
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(status.message()),
              StartsWith("cannot read checkpoint " + path_ + ": "));
  EXPECT_EQ(std::string(status.message()).find('\n'), std::string::npos);
}

}  // namespace
}  // namespace sparse_layers::layers
