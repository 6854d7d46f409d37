#include "pipelines/activations/activation_shards.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "absl/strings/str_cat.h"
#include "base/common/digest.h"

namespace sparse_layers::datasets {
namespace {

std::string TempDir() {
  const auto dir =
      std::filesystem::path(::testing::TempDir()) /
      ::testing::UnitTest::GetInstance()->current_test_info()->name();
  std::filesystem::create_directories(dir);
  return dir.string();
}

ActivationManifest Header() {
  ActivationManifest header;
  header.set_split("train");
  header.set_d_in(3);
  header.set_d_out(2);
  return header;
}

TEST(ActivationShardsTest, RoundTripsRowsAcrossShardsAndRecordsTheOutputMean) {
  const std::string dir = TempDir();
  ActivationWriter writer(dir, Header(), /*shard_rows=*/4);
  const torch::Tensor x = torch::arange(30, torch::kFloat).reshape({10, 3});
  const torch::Tensor y = torch::arange(20, torch::kFloat).reshape({10, 2});
  ASSERT_TRUE(writer.Append(x.slice(0, 0, 7), y.slice(0, 0, 7)).ok());
  ASSERT_TRUE(writer.Append(x.slice(0, 7), y.slice(0, 7)).ok());
  auto manifest = writer.Finish();
  ASSERT_TRUE(manifest.ok()) << manifest.status();
  EXPECT_EQ(manifest->rows(), 10);
  EXPECT_EQ(manifest->shards_size(), 3);  // 4 + 4 + 2 rows.
  // Mean of y columns: (0+2+...+18)/10 = 9 and 10.
  ASSERT_EQ(manifest->output_mean_size(), 2);
  EXPECT_FLOAT_EQ(manifest->output_mean(0), 9);
  EXPECT_FLOAT_EQ(manifest->output_mean(1), 10);

  auto set = ActivationSet::Open(dir + "/train.activations.textproto");
  ASSERT_TRUE(set.ok()) << set.status();
  auto [all_x, all_y] = (*set)->Range(0, 10);
  EXPECT_TRUE(torch::equal(all_x, x));
  EXPECT_TRUE(torch::equal(all_y, y));
  auto [some_x, some_y] = (*set)->Gather({9, 3, 4});
  EXPECT_TRUE(torch::equal(some_x[1], x[3]));
  EXPECT_TRUE(torch::equal(some_y[0], y[9]));
}

TEST(ActivationShardsTest, TrainBatchesAreEpochPermutationsFixedBySeedAndStep) {
  const std::string dir = TempDir();
  ActivationWriter writer(dir, Header(), 8);
  const torch::Tensor x = torch::arange(60, torch::kFloat).reshape({20, 3});
  ASSERT_TRUE(writer.Append(x, torch::zeros({20, 2})).ok());
  ASSERT_TRUE(writer.Finish().ok());
  auto set = *ActivationSet::Open(dir + "/train.activations.textproto");
  std::set<float> first_epoch;
  for (int step = 0; step < 4; ++step) {  // 4 x 5 rows = one epoch.
    auto [bx, by] = set->TrainBatch(step, 5, /*seed=*/7);
    for (int i = 0; i < 5; ++i) first_epoch.insert(bx[i][0].item<float>());
  }
  EXPECT_EQ(first_epoch.size(), 20u);  // Every row exactly once.
  // Same (seed, step) -> same batch, whatever was asked in between.
  auto a = set->TrainBatch(6, 5, 7).first;
  set->TrainBatch(1, 5, 8);
  EXPECT_TRUE(torch::equal(set->TrainBatch(6, 5, 7).first, a));
  EXPECT_FALSE(torch::equal(set->TrainBatch(6, 5, 8).first, a));
}

// Attention caches are whole windows: units of 4 consecutive rows keep their
// order inside a batch, and an epoch visits each of the 5 windows once.
TEST(ActivationShardsTest, WindowBatchesKeepWindowsWhole) {
  const std::string dir = TempDir();
  ActivationWriter writer(dir, Header(), 8);
  const torch::Tensor x = torch::arange(60, torch::kFloat).reshape({20, 3});
  ASSERT_TRUE(writer.Append(x, torch::zeros({20, 2})).ok());
  ASSERT_TRUE(writer.Finish().ok());
  auto set = *ActivationSet::Open(dir + "/train.activations.textproto");
  std::set<int64_t> windows;
  for (int step = 0; step < 5; ++step) {
    const torch::Tensor rows =
        set->TrainBatch(step, 1, /*seed=*/3, /*unit_rows=*/4)
            .first.select(1, 0);
    ASSERT_EQ(rows.size(0), 4);
    const int64_t first = rows[0].item<int64_t>() / 3;  // Row index.
    EXPECT_EQ(first % 4, 0);
    EXPECT_TRUE(torch::equal(rows, x.slice(0, first, first + 4).select(1, 0)));
    windows.insert(first / 4);
  }
  EXPECT_EQ(windows.size(), 5u);
}

TEST(ActivationShardsTest, TruncatedShardIsRejected) {
  const std::string dir = TempDir();
  ActivationWriter writer(dir, Header(), 8);
  ASSERT_TRUE(writer.Append(torch::ones({4, 3}), torch::ones({4, 2})).ok());
  auto manifest = writer.Finish();
  ASSERT_TRUE(manifest.ok());
  std::filesystem::resize_file(dir + "/" + manifest->shards(0).file(), 40);
  EXPECT_FALSE(ActivationSet::Open(dir + "/train.activations.textproto").ok());
}

TEST(ActivationShardsTest, EditedPayloadByteIsCaughtByTheManifestDigest) {
  const std::string dir = TempDir();
  ActivationWriter writer(dir, Header(), 8);
  ASSERT_TRUE(writer.Append(torch::ones({4, 3}), torch::ones({4, 2})).ok());
  auto manifest = writer.Finish();
  ASSERT_TRUE(manifest.ok());
  const std::string shard = dir + "/" + manifest->shards(0).file();
  std::fstream file(shard, std::ios::in | std::ios::out | std::ios::binary);
  file.seekp(-1, std::ios::end);  // The last float's top byte: 1.0 -> 1.0e4.
  file.put('\x46');
  file.close();
  auto set = ActivationSet::Open(dir + "/train.activations.textproto");
  ASSERT_FALSE(set.ok());
  EXPECT_EQ(set.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(
      std::string(set.status().message()),
      ::testing::StartsWith("activation shard " + shard + ": SHA-256 "));
}

TEST(ActivationShardsTest, CacheOfAnotherModelIsNamed) {
  const std::string dir = TempDir();
  std::ofstream(dir + "/model.pt") << "the cached model";
  std::ofstream(dir + "/other.pt") << "another model";
  ActivationManifest header = Header();
  header.set_checkpoint_sha256(*Sha256OfFile(dir + "/model.pt"));
  ActivationWriter writer(dir, header, 8);
  ASSERT_TRUE(writer.Append(torch::ones({4, 3}), torch::ones({4, 2})).ok());
  ASSERT_TRUE(writer.Finish().ok());
  auto set = ActivationSet::Open(dir + "/train.activations.textproto");
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_TRUE((*set)->CheckMadeFrom(dir + "/model.pt").ok());
  const absl::Status other = (*set)->CheckMadeFrom(dir + "/other.pt");
  EXPECT_EQ(other.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(other.message()),
              ::testing::MatchesRegex(
                  "activation cache .*/train.activations.textproto was made "
                  "from the checkpoint with SHA-256 [0-9a-f]{12}\\.\\.\\., "
                  "not .*/other.pt \\([0-9a-f]{12}\\.\\.\\.\\)"));
}

TEST(ActivationShardsTest, CachesOfAnotherSiteDoNotPair) {
  const std::string dir = TempDir();
  for (int layer : {1, 2}) {
    ActivationManifest header = Header();
    header.set_split(absl::StrCat("block", layer));
    header.set_layer(layer);
    header.set_hook_out(absl::StrCat("blocks.", layer, ".ffn.hook_out"));
    ActivationWriter writer(dir, header, 8);
    ASSERT_TRUE(writer.Append(torch::ones({4, 3}), torch::ones({4, 2})).ok());
    ASSERT_TRUE(writer.Finish().ok());
  }
  auto one = ActivationSet::Open(dir + "/block1.activations.textproto");
  auto two = ActivationSet::Open(dir + "/block2.activations.textproto");
  ASSERT_TRUE(one.ok() && two.ok());
  EXPECT_TRUE((*one)->CheckSameSiteAs(**one).ok());
  EXPECT_EQ((*one)->CheckSameSiteAs(**two).message(),
            "activation caches " + dir + "/block1.activations.textproto and " +
                dir +
                "/block2.activations.textproto are of different sites: layer "
                "1 vs 2");
  EXPECT_TRUE((*one)->CheckSite(1, ".ffn.", "the fit").ok());
  EXPECT_EQ((*one)->CheckSite(2, ".ffn.", "the fit").message(),
            "activation cache " + dir +
                "/block1.activations.textproto caches block 1 "
                "(blocks.1.ffn.hook_out), but the fit is block 2 (.ffn.)");
  EXPECT_FALSE((*one)->CheckSite(1, ".attn.", "the fit").ok());
}

}  // namespace
}  // namespace sparse_layers::datasets
