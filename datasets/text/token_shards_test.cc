#include "datasets/text/token_shards.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "tools/common/digest.h"
#include "tools/common/file_io.h"

namespace sparse_layers::datasets {
namespace {

class TokenShardsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = absl::StrCat(
        std::getenv("TEST_TMPDIR"), "/",
        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    TokenShardManifest manifest;
    manifest.set_split("train");
    manifest.set_vocab_size(1000);
    for (int shard = 0; shard < 2; ++shard) {
      std::vector<uint16_t> tokens;
      for (int i = 0; i < 100 + 50 * shard; ++i) {
        tokens.push_back(static_cast<uint16_t>(shard * 500 + i));
      }
      const std::string file = absl::StrCat("s", shard, ".bin");
      ASSERT_TRUE(WriteTokenShard(dir_ + "/" + file, tokens, 1000).ok());
      TokenShard* entry = manifest.add_shards();
      entry->set_file(file);
      entry->set_tokens(tokens.size());
      entry->set_sha256(*Sha256OfFile(dir_ + "/" + file));
      manifest.set_tokens(manifest.tokens() + tokens.size());
    }
    std::string text;
    google::protobuf::TextFormat::PrintToString(manifest, &text);
    ASSERT_TRUE(WriteFileAtomically(manifest_path(), text).ok());
  }
  std::string manifest_path() const { return dir_ + "/m.textproto"; }

  std::string dir_;
};

TEST_F(TokenShardsTest, TrainBatchesAreShiftedWindowsFixedBySeedAndStep) {
  auto shards = TokenShardSet::Open(manifest_path());
  ASSERT_TRUE(shards.ok()) << shards.status();
  EXPECT_EQ((*shards)->tokens(), 250);
  auto sampler = BatchSampler::Create(shards->get(), 4, 16, 7);
  ASSERT_TRUE(sampler.ok());
  const TokenBatch batch = sampler->TrainBatch(3);
  ASSERT_EQ(batch.inputs.size(), 64u);
  for (int row = 0; row < 4; ++row) {
    for (int t = 0; t < 16; ++t) {
      // Consecutive ids within a window: the window never crosses a shard.
      EXPECT_EQ(batch.targets[row * 16 + t], batch.inputs[row * 16 + t] + 1);
    }
  }
  EXPECT_EQ(sampler->TrainBatch(3).inputs, batch.inputs);
  EXPECT_NE(sampler->TrainBatch(4).inputs, batch.inputs);
  auto other_seed = BatchSampler::Create(shards->get(), 4, 16, 8);
  EXPECT_NE(other_seed->TrainBatch(3).inputs, batch.inputs);

  // Both shards are drawn from over many steps.
  std::set<bool> from_second;
  for (int step = 0; step < 50; ++step) {
    for (int64_t id : sampler->TrainBatch(step).inputs)
      from_second.insert(id >= 500);
  }
  EXPECT_EQ(from_second.size(), 2u);
}

TEST_F(TokenShardsTest, EvalBatchesTileTheShardsWithoutOverlap) {
  auto shards = TokenShardSet::Open(manifest_path());
  ASSERT_TRUE(shards.ok());
  auto sampler = BatchSampler::Create(shards->get(), 2, 16, 0);
  // (100 - 1) / 16 = 6 windows in shard 0, (150 - 1) / 16 = 9 in shard 1.
  EXPECT_EQ(sampler->EvalWindowCount(), 15);
  // Asking for all windows tiles them in order.
  const TokenBatch first = sampler->EvalBatch(0, 8);
  EXPECT_EQ(first.inputs[0], 0);
  EXPECT_EQ(first.inputs[16], 16);
  const TokenBatch fourth = sampler->EvalBatch(3, 8);  // Windows 6 and 7.
  EXPECT_EQ(fourth.inputs[0], 500);
  EXPECT_EQ(fourth.inputs[16], 516);
  // Two batches of 15 windows: windows 0, 3, 7, 11 spread over both shards.
  EXPECT_EQ(sampler->EvalBatch(0, 2).inputs[16], 3 * 16);
  EXPECT_EQ(sampler->EvalBatch(1, 2).inputs[0], 500 + (7 - 6) * 16);
  EXPECT_EQ(sampler->EvalBatch(1, 2).inputs[16], 500 + (11 - 6) * 16);
}

TEST_F(TokenShardsTest, TruncatedShardIsAClearError) {
  std::filesystem::resize_file(dir_ + "/s1.bin", 32 + 2 * 149);
  auto shards = TokenShardSet::Open(manifest_path());
  ASSERT_FALSE(shards.ok());
  EXPECT_EQ(shards.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(shards.status().message().find("s1.bin"), std::string::npos);
  EXPECT_NE(shards.status().message().find("truncated"), std::string::npos)
      << shards.status();
}

TEST_F(TokenShardsTest, ForeignFileAndOutOfRangeIdsAreClearErrors) {
  ASSERT_TRUE(
      WriteFileAtomically(dir_ + "/s0.bin", std::string(300, 'x')).ok());
  auto foreign = TokenShardSet::Open(manifest_path());
  ASSERT_FALSE(foreign.ok());
  EXPECT_NE(foreign.status().message().find("bad magic"), std::string::npos);

  std::vector<uint16_t> tokens(100, 7);
  tokens[42] = 1000;
  ASSERT_TRUE(WriteTokenShard(dir_ + "/s0.bin", tokens, 1000).ok());
  auto bad_id = TokenShardSet::Open(manifest_path());
  ASSERT_FALSE(bad_id.ok());
  EXPECT_NE(bad_id.status().message().find("token id 1000"), std::string::npos)
      << bad_id.status();
}

TEST_F(TokenShardsTest, EditedPayloadByteIsCaughtByTheManifestDigest) {
  // Token 7 of shard 1 becomes another in-range id: only the digest sees it.
  std::fstream file(dir_ + "/s1.bin",
                    std::ios::in | std::ios::out | std::ios::binary);
  file.seekp(32 + 2 * 7);
  file.put('\x01');
  file.close();
  auto shards = TokenShardSet::Open(manifest_path());
  ASSERT_FALSE(shards.ok());
  EXPECT_EQ(shards.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(shards.status().message()),
              ::testing::MatchesRegex(
                  "token shard .*/s1.bin: SHA-256 [0-9a-f]{12}\\.\\.\\. "
                  "differs from [0-9a-f]{12}\\.\\.\\. recorded in "
                  ".*/m.textproto \\(the file changed after it was "
                  "written\\)"));
}

TEST_F(TokenShardsTest, WindowLongerThanEveryShardIsRejected) {
  auto shards = TokenShardSet::Open(manifest_path());
  ASSERT_TRUE(shards.ok());
  EXPECT_FALSE(BatchSampler::Create(shards->get(), 1, 150, 0).ok());
  EXPECT_TRUE(BatchSampler::Create(shards->get(), 1, 149, 0).ok());
}

}  // namespace
}  // namespace sparse_layers::datasets
