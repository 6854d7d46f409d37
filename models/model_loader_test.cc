#include "models/model_loader.h"

#include <torch/torch.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "models/checkpoints/checkpoint.h"
#include "models/tiny_gpt.h"

namespace sparse_layers::layers {
namespace {

config::ExperimentConfig TinyConfig(const std::string& name) {
  config::ExperimentConfig config;
  config.set_name(name);
  *config.mutable_model() = testing::TinyModelConfig(20, 16, 1);
  config.mutable_runtime()->set_seed(5);
  return config;
}

// The checkpoint of `config`'s randomly initialised model, in TEST_TMPDIR.
std::string Save(const config::ExperimentConfig& config) {
  const std::string path =
      std::string(std::getenv("TEST_TMPDIR")) + "/" + config.name() + ".pt";
  auto model = InitializeModel(config);
  EXPECT_TRUE(model.ok()) << model.status();
  CheckpointState state;
  google::protobuf::TextFormat::PrintToString(config, &state.config_text);
  EXPECT_TRUE(SaveCheckpoint(path, **model, nullptr, state).ok());
  return path;
}

// The same seed draws the same parameters as seeding by hand (the trainer's
// start and evaluate_bsp's controls), another seed others.
TEST(InitializeModelTest, DrawsTheParametersFromTheRuntimeSeed) {
  config::ExperimentConfig config = TinyConfig("lm");
  auto model = InitializeModel(config);
  ASSERT_TRUE(model.ok()) << model.status();
  torch::manual_seed(5);
  auto by_hand = GptImpl::Create(*GptOptionsFromConfig(config.model()));
  ASSERT_TRUE(by_hand.ok()) << by_hand.status();
  const auto expected = (*by_hand)->named_parameters();
  for (const auto& item : (*model)->named_parameters()) {
    EXPECT_TRUE(torch::equal(item.value(), expected[item.key()])) << item.key();
  }
  config.mutable_runtime()->set_seed(6);
  auto reseeded = InitializeModel(config);
  ASSERT_TRUE(reseeded.ok()) << reseeded.status();
  EXPECT_FALSE(
      torch::equal((*reseeded)->parameters()[0], (*model)->parameters()[0]));
}

// The checkpoint of a fit named `name`: `replacement` (text format) in the
// tiny model.
std::string SaveFit(const std::string& name, const std::string& replacement) {
  config::ExperimentConfig config = TinyConfig(name);
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(
      replacement, config.mutable_model()->mutable_replacement()));
  return Save(config);
}

class LoadReplacementsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    lm_ = Save(TinyConfig("lm"));
    tc_ = SaveFit("tc", R"(ffn: "transcoder" d_ffn: 32 top_k: 4)");
    lorsa_ = SaveFit("lorsa", R"(ffn: "lorsa" site: ATTN d_ffn: 4 top_k: 2)");
    sae_ = SaveFit("attn_sae",
                   R"(ffn: "topk_sae" site: ATTN on_output: true d_ffn: 32
                      top_k: 4)");
  }

  std::string lm_, tc_, lorsa_, sae_;
};

TEST_F(LoadReplacementsTest, FitsInOrderWithTheirPaths) {
  auto fits = LoadReplacements({tc_, sae_});
  ASSERT_TRUE(fits.ok()) << fits.status();
  ASSERT_EQ(fits->size(), 2u);
  EXPECT_EQ((*fits)[0].path, tc_);
  EXPECT_EQ((*fits)[0].spec.ffn(), "transcoder");
  EXPECT_EQ((*fits)[0].loaded.config.name(), "tc");
  EXPECT_NE((*fits)[0].layer, nullptr);
  EXPECT_EQ((*fits)[1].path, sae_);
  EXPECT_NE((*fits)[1].layer, nullptr);

  // A Lorsa stands in for the attention itself: no sparse layer.
  fits = LoadReplacements({lorsa_, sae_}, FitKind::kAttentionSite);
  ASSERT_TRUE(fits.ok()) << fits.status();
  ASSERT_EQ(fits->size(), 2u);
  EXPECT_EQ((*fits)[0].layer, nullptr);
  EXPECT_TRUE(static_cast<bool>((*fits)[0].loaded.model->LorsaReplacement()));
  EXPECT_EQ((*fits)[1].spec.ffn(), "topk_sae");
  EXPECT_NE((*fits)[1].layer, nullptr);
}

TEST_F(LoadReplacementsTest, AFitOfAnotherKindFailsThemAllNamingItsPath) {
  EXPECT_EQ(LoadReplacements({tc_, lm_}).status().message(),
            lm_ + " has no sparse replacement layer");
  EXPECT_EQ(LoadReplacements({lorsa_}).status().message(),
            lorsa_ + " has no sparse replacement layer");
  EXPECT_EQ(LoadReplacements({lorsa_, tc_}, FitKind::kAttentionSite)
                .status()
                .message(),
            tc_ + " is not an attention-site fit");
  EXPECT_EQ(LoadReplacements({lm_}, FitKind::kAttentionSite).status().message(),
            lm_ + " is not an attention-site fit");
}

}  // namespace
}  // namespace sparse_layers::layers
