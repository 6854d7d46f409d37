#include "analysis/attention/per_layer_lorsas.h"

#include <cstdlib>
#include <string>
#include <vector>

#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "models/checkpoints/checkpoint.h"
#include "models/model_loader.h"
#include "models/tiny_gpt.h"

namespace sparse_layers::analysis {
namespace {

// The checkpoint of a Lorsa fit of the 2-block tiny model: block `layer`, K
// `k`, runtime.seed `seed`, randomly initialised, in TEST_TMPDIR.
std::string SaveLorsa(const std::string& name, int layer, int k,
                      int64_t seed = 5) {
  config::ExperimentConfig config;
  config.set_name(name);
  *config.mutable_model() = layers::testing::TinyModelConfig(20, 16, 2);
  config.mutable_runtime()->set_seed(seed);
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(
      "ffn: \"lorsa\" site: ATTN d_ffn: 4 top_k: " + std::to_string(k) +
          " layer: " + std::to_string(layer),
      config.mutable_model()->mutable_replacement()));
  const std::string path =
      std::string(std::getenv("TEST_TMPDIR")) + "/" + name + ".pt";
  auto model = layers::InitializeModel(config);
  EXPECT_TRUE(model.ok()) << model.status();
  layers::CheckpointState state;
  google::protobuf::TextFormat::PrintToString(config, &state.config_text);
  EXPECT_TRUE(layers::SaveCheckpoint(path, **model, nullptr, state).ok());
  return path;
}

absl::StatusOr<PerLayerLorsas> Select(const std::vector<std::string>& paths) {
  absl::StatusOr<std::vector<LorsaFit>> fits = LoadLorsaFits(paths);
  EXPECT_TRUE(fits.ok()) << fits.status();
  return LorsasAtPerLayerK(*fits, 2);
}

// The K fitted at the most blocks wins (Lorsa Fig. 3's per-layer K); a fit
// at another K (the K sweep's block) is left out.
TEST(LorsasAtPerLayerKTest, TheKFittedAtTheMostBlocksOneLorsaPerBlock) {
  const std::string b0 = SaveLorsa("b0_k2", 0, 2);
  const std::string b1 = SaveLorsa("b1_k2", 1, 2);
  const std::string sweep = SaveLorsa("b1_k3", 1, 3);
  absl::StatusOr<PerLayerLorsas> lorsas = Select({sweep, b0, b1});
  ASSERT_TRUE(lorsas.ok()) << lorsas.status();
  EXPECT_EQ(lorsas->top_k, 2);
  EXPECT_EQ(lorsas->count, 2);
  EXPECT_EQ(lorsas->seed, 5);
  ASSERT_EQ(lorsas->by_block.size(), 2u);
  EXPECT_TRUE(static_cast<bool>(lorsas->by_block[0]));
  EXPECT_TRUE(static_cast<bool>(lorsas->by_block[1]));
  EXPECT_EQ(lorsas->by_block[1]->options().top_k, 2);
  EXPECT_FALSE(lorsas->by_block[0]->is_training());

  // Only block 0 fitted: block 1 has no Lorsa.
  lorsas = Select({b0});
  ASSERT_TRUE(lorsas.ok()) << lorsas.status();
  EXPECT_EQ(lorsas->count, 1);
  EXPECT_FALSE(static_cast<bool>(lorsas->by_block[1]));
}

TEST(LorsasAtPerLayerKTest, TwoFitsOfABlockOrTwoSeedsOrNoneAreErrors) {
  const std::string b0 = SaveLorsa("e_b0_k2", 0, 2);
  const std::string again = SaveLorsa("e_b0_k2_again", 0, 2);
  const std::string other_seed = SaveLorsa("e_b1_k2_s6", 1, 2, 6);
  EXPECT_FALSE(Select({b0, again}).ok());
  EXPECT_FALSE(Select({b0, other_seed}).ok());
  std::vector<LorsaFit> none;
  EXPECT_FALSE(LorsasAtPerLayerK(none, 2).ok());
}

// The fits' window, capped at the context; 0 reads the whole context.
TEST(FitWindowLengthTest, TheFitsWindowCappedAtTheContext) {
  EXPECT_EQ(FitWindowLength(1024, 256), 256);
  EXPECT_EQ(FitWindowLength(64, 256), 64);
  EXPECT_EQ(FitWindowLength(64, 0), 64);
}

}  // namespace
}  // namespace sparse_layers::analysis
