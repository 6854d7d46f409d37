#include "datasets/text/token_shards.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include "absl/strings/str_cat.h"
#include "base/common/digest.h"
#include "base/common/file_io.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"

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

// A header count whose byte size wraps around 2^64 to the file's size (it
// crashed the reader: the size check passed and the id scan ran off the map).
TEST_F(TokenShardsTest, OverflowingHeaderCountIsAClearError) {
  std::string bytes(32 + 8, '\0');
  std::memcpy(bytes.data(), "SLTOKv1", 8);
  const uint32_t vocab = 1000;
  std::memcpy(bytes.data() + 8, &vocab, 4);
  const uint64_t tokens = (uint64_t{1} << 63) + 4;  // x 2 bytes: 8 mod 2^64.
  std::memcpy(bytes.data() + 16, &tokens, 8);
  ASSERT_TRUE(WriteFileAtomically(dir_ + "/s0.bin", bytes).ok());
  auto shards = TokenShardSet::Open(manifest_path());
  ASSERT_FALSE(shards.ok());
  EXPECT_THAT(std::string(shards.status().message()),
              ::testing::EndsWith("s0.bin: header says 9223372036854775812 "
                                  "tokens of 2 bytes but the file has 40 "
                                  "bytes (room for 4, truncated)"));
}

TEST_F(TokenShardsTest, ShardsOfAnotherTokenizerDoNotPair) {
  auto train = TokenShardSet::Open(manifest_path());
  ASSERT_TRUE(train.ok()) << train.status();
  EXPECT_TRUE((*train)->CheckSameTokenizer(**train).ok());
  std::string text = *ReadFileToString(manifest_path());
  text += "tokenizer_sha256: \"ab12ab12ab12ab12\"\n";
  ASSERT_TRUE(WriteFileAtomically(dir_ + "/other.textproto", text).ok());
  auto other = TokenShardSet::Open(dir_ + "/other.textproto");
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_EQ(
      (*train)->CheckSameTokenizer(**other).message(),
      absl::StrCat(manifest_path(), " and ", dir_,
                   "/other.textproto were encoded with different "
                   "tokenizers: tokenizer_sha256 (none) vs ab12ab12ab12"));
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

// The bytes of a uint16 shard are those written before wider ids existed: the
// header's word after the vocabulary size (id_bytes, once "reserved") is 0.
TEST(TokenShardFormatTest, Uint16ShardBytesAreUnchanged) {
  const std::string path =
      absl::StrCat(std::getenv("TEST_TMPDIR"), "/narrow.bin");
  const std::vector<uint16_t> tokens = {1, 258, 65535};
  ASSERT_TRUE(WriteTokenShard(path, tokens, 50257).ok());
  const std::string expected(
      "SLTOKv1\0"                         // magic
      "\x51\xc4\x00\x00"                  // vocab_size 50257
      "\x00\x00\x00\x00"                  // id_bytes 0: uint16
      "\x03\x00\x00\x00\x00\x00\x00\x00"  // tokens 3
      "\x00\x00\x00\x00\x00\x00\x00\x00"  // reserved2
      "\x01\x00\x02\x01\xff\xff",         // 1, 258, 65535
      38);
  EXPECT_EQ(*ReadFileToString(path), expected);
}

// A train split of one document written by TokenSplitWriter into a fresh
// <TEST_TMPDIR>/<name>, with end-of-text id 128001.
std::string WriteSplit(const std::string& name, int32_t vocab_size,
                       const std::vector<int>& ids) {
  const std::string dir = absl::StrCat(std::getenv("TEST_TMPDIR"), "/", name);
  std::filesystem::create_directories(dir);
  TokenShardManifest header;
  header.set_split("train");
  header.set_vocab_size(vocab_size);
  header.set_end_of_text_id(128001);
  TokenSplitWriter writer(dir, header, 1 << 20);
  EXPECT_TRUE(
      writer.AddDocument(ids, /*end_of_text=*/vocab_size > 128001).ok());
  EXPECT_EQ(writer.AddDocument({-1}, false).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(writer.Finish().ok());
  return dir;
}

// Above 65,536 pieces (Llama 3's 128,256) the writer stores uint32 ids, the
// header says 4 bytes, and the set and sampler serve them as they are.
TEST(TokenShardFormatTest, WideVocabularyRoundTripsAsUint32) {
  const std::string dir =
      WriteSplit("wide", 128256, {0, 65535, 65536, 70000, 128000, 128255});

  const std::string shard = *ReadFileToString(dir + "/train_000.bin");
  ASSERT_EQ(shard.size(), 32u + 4 * 7);
  EXPECT_EQ(shard.substr(8, 8), std::string("\x00\xf5\x01\x00\x04\x00\x00\x00",
                                            8));  // 128256, id_bytes 4.
  EXPECT_EQ(shard.substr(32 + 4 * 2, 4), std::string("\x00\x00\x01\x00", 4));

  auto set = TokenShardSet::Open(dir + "/train.tokens.textproto");
  ASSERT_TRUE(set.ok()) << set.status();
  const TokenIds stored = (*set)->shard(0);
  EXPECT_EQ(stored.id_bytes(), 4);
  std::vector<int64_t> read;
  for (size_t i = 0; i < stored.size(); ++i) read.push_back(stored[i]);
  EXPECT_THAT(read, ::testing::ElementsAre(0, 65535, 65536, 70000, 128000,
                                           128255, 128001));
  auto sampler = BatchSampler::Create(set->get(), 1, 6, 0);
  ASSERT_TRUE(sampler.ok());
  const TokenBatch batch = sampler->EvalBatch(0, 1);
  EXPECT_THAT(batch.inputs,
              ::testing::ElementsAre(0, 65535, 65536, 70000, 128000, 128255));
  EXPECT_EQ(batch.targets.back(), 128001);
}

// A 65,536-piece vocabulary still fits uint16 (ids up to 65535).
TEST(TokenShardFormatTest, SplitWriterKeepsUint16WhereIdsFit) {
  const std::string dir = WriteSplit("fits", 65536, {7, 65535});
  EXPECT_EQ(ReadFileToString(dir + "/train_000.bin")->substr(8, 24),
            std::string("\x00\x00\x01\x00"  // 65536, id_bytes 0.
                        "\x00\x00\x00\x00"
                        "\x02\x00\x00\x00\x00\x00\x00\x00"
                        "\x00\x00\x00\x00\x00\x00\x00\x00",
                        24));
  auto set = TokenShardSet::Open(dir + "/train.tokens.textproto");
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ((*set)->shard(0)[1], 65535);
}

TEST_F(TokenShardsTest, UnknownIdWidthIsAClearError) {
  std::fstream file(dir_ + "/s1.bin",
                    std::ios::in | std::ios::out | std::ios::binary);
  file.seekp(12);
  file.put('\x03');
  file.close();
  auto shards = TokenShardSet::Open(manifest_path());
  ASSERT_FALSE(shards.ok());
  EXPECT_THAT(std::string(shards.status().message()),
              ::testing::MatchesRegex(
                  "token shard .*/s1.bin: ids of 3 bytes \\(this reader takes "
                  "0 for uint16 or 4 for uint32\\)"));
}

}  // namespace
}  // namespace sparse_layers::datasets
