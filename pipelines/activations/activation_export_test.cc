#include "pipelines/activations/activation_export.h"

#include <torch/torch.h>

#include <filesystem>
#include <string>

#include "gtest/gtest.h"
#include "models/checkpoints/safetensors.h"

namespace sparse_layers::datasets {
namespace {

std::string TempDir() {
  const auto dir =
      std::filesystem::path(::testing::TempDir()) /
      ::testing::UnitTest::GetInstance()->current_test_info()->name();
  std::filesystem::create_directories(dir);
  return dir.string();
}

// Ten rows in shards of 4, 4 and 2: one file per shard, each holding its rows
// of x as "inputs" and of y as "targets", with the manifest in its metadata.
TEST(ActivationExportTest, OneFilePerShardWithItsRowsAndTheManifest) {
  const std::string dir = TempDir();
  ActivationManifest header;
  header.set_split("test");
  header.set_hook_in("blocks.2.ffn.hook_in");
  header.set_hook_out("blocks.2.ffn.hook_out");
  header.set_layer(2);
  header.set_d_in(3);
  header.set_d_out(2);
  header.set_sequence_length(5);
  header.set_checkpoint_sha256("ab12");
  std::filesystem::create_directories(dir + "/cache");
  ActivationWriter writer(dir + "/cache", header, /*shard_rows=*/4);
  const torch::Tensor x = torch::randn({10, 3});
  const torch::Tensor y = torch::randn({10, 2});
  ASSERT_TRUE(writer.Append(x, y).ok());
  ASSERT_TRUE(writer.Finish().ok());
  auto set = ActivationSet::Open(dir + "/cache/test.activations.textproto");
  ASSERT_TRUE(set.ok()) << set.status();

  auto written = ExportActivationCache(**set, dir + "/out");
  ASSERT_TRUE(written.ok()) << written.status();
  ASSERT_EQ(written->size(), 3u);
  EXPECT_EQ((*written)[2], dir + "/out/test-00002.safetensors");
  const int64_t first_rows[] = {0, 4, 8}, rows[] = {4, 4, 2};
  for (int shard = 0; shard < 3; ++shard) {
    auto file = layers::SafetensorsFile::Open((*written)[shard]);
    ASSERT_TRUE(file.ok()) << file.status();
    EXPECT_EQ((*file)->Names(),
              (std::vector<std::string>{"inputs", "targets"}));
    auto inputs = (*file)->ReadFloat("inputs", {rows[shard], 3});
    auto targets = (*file)->ReadFloat("targets", {rows[shard], 2});
    ASSERT_TRUE(inputs.ok() && targets.ok());
    EXPECT_TRUE(
        torch::equal(*inputs, x.narrow(0, first_rows[shard], rows[shard])));
    EXPECT_TRUE(
        torch::equal(*targets, y.narrow(0, first_rows[shard], rows[shard])));
    const auto& metadata = (*file)->metadata();
    EXPECT_EQ(metadata.at("format"), "sparse_layers.activations.v1");
    EXPECT_EQ(metadata.at("first_row"), std::to_string(first_rows[shard]));
    EXPECT_EQ(metadata.at("rows"), std::to_string(rows[shard]));
    EXPECT_EQ(metadata.at("hook_in"), "blocks.2.ffn.hook_in");
    EXPECT_EQ(metadata.at("hook_out"), "blocks.2.ffn.hook_out");
    EXPECT_EQ(metadata.at("layer"), "2");
    EXPECT_EQ(metadata.at("sequence_length"), "5");
    EXPECT_EQ(metadata.at("checkpoint_sha256"), "ab12");
  }
}

TEST(ActivationExportTest, AnUnwritableDirectoryIsOneLine) {
  const std::string dir = TempDir();
  ActivationManifest header;
  header.set_split("train");
  header.set_d_in(1);
  header.set_d_out(1);
  ActivationWriter writer(dir, header, 4);
  ASSERT_TRUE(writer.Append(torch::ones({2, 1}), torch::ones({2, 1})).ok());
  ASSERT_TRUE(writer.Finish().ok());
  auto set = ActivationSet::Open(dir + "/train.activations.textproto");
  ASSERT_TRUE(set.ok()) << set.status();
  // A regular file where the directory should be.
  const std::string blocked = dir + "/train.activations.textproto/out";
  const auto written = ExportActivationCache(**set, blocked);
  ASSERT_FALSE(written.ok());
  EXPECT_NE(written.status().message().find(blocked + ": cannot create"),
            std::string::npos)
      << written.status();
}

}  // namespace
}  // namespace sparse_layers::datasets
