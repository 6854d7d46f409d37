#include "pipelines/activations/activation_caching.h"

#include <torch/torch.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "base/common/digest.h"
#include "base/common/staged_outputs.h"
#include "config/experiment.pb.h"
#include "datasets/text/test_token_split.h"
#include "datasets/text/token_shards.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "models/checkpoints/checkpoint.h"
#include "models/gpt.h"
#include "models/model_loader.h"
#include "ops/hooks/hook_point.h"
#include "pipelines/activations/activation_shards.h"

namespace sparse_layers::datasets {
namespace {

TEST(ActivationCacheBatchesTest, CoversTheRowsWithinTheSplit) {
  // 50 rows in windows of 2 x 8: 4 passes, unless the split holds fewer.
  EXPECT_EQ(ActivationCacheBatches(50, 2, 8, 100), 4);
  EXPECT_EQ(ActivationCacheBatches(48, 2, 8, 100), 3);
  EXPECT_EQ(ActivationCacheBatches(50, 2, 8, 5), 2);
  EXPECT_EQ(ActivationCacheBatches(1, 8, 128, 7), 0);
}

TEST(ActivationRowsToTakeTest, AttentionTakesWholeWindows) {
  EXPECT_EQ(ActivationRowsToTake(50, 2, 8, false), 16);
  EXPECT_EQ(ActivationRowsToTake(2, 2, 8, false), 2);
  EXPECT_EQ(ActivationRowsToTake(20, 2, 8, true), 16);
  EXPECT_EQ(ActivationRowsToTake(13, 2, 8, true), 8);
  EXPECT_EQ(ActivationRowsToTake(2, 2, 8, true), 0);
}

class CacheActivationsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::getenv("TEST_TMPDIR");
    config::ExperimentConfig config;
    config::ModelConfig& model = *config.mutable_model();
    model.set_vocab_size(20);
    model.set_context_length(8);
    model.set_d_model(16);
    model.set_n_layers(2);
    model.set_n_heads(2);
    model.set_d_ffn(32);
    config.mutable_runtime()->set_seed(3);
    auto options = layers::GptOptionsFromConfig(model);
    ASSERT_TRUE(options.ok()) << options.status();
    torch::manual_seed(1);
    auto gpt = layers::GptImpl::Create(*options);
    ASSERT_TRUE(gpt.ok()) << gpt.status();
    layers::CheckpointState state;
    google::protobuf::TextFormat::PrintToString(config, &state.config_text);
    checkpoint_ = dir_ + "/lm.pt";
    ASSERT_TRUE(SaveCheckpoint(checkpoint_, **gpt, nullptr, state).ok());
    tokens_set_ = RandomTokenSplit("tokens", "test", 20, 1000, 7);
    ASSERT_NE(tokens_set_, nullptr);
    tokens_ = dir_ + "/tokens/test.tokens.textproto";
  }

  ActivationCacheOptions Options(const std::string& name) {
    ActivationCacheOptions options;
    options.checkpoint = checkpoint_;
    options.tokens = tokens_;
    options.out_dir = dir_ + "/" + name;
    options.layer = 1;
    options.rows = 50;
    options.batch = 2;
    return options;
  }

  std::string dir_, checkpoint_, tokens_;
  std::unique_ptr<TokenShardSet> tokens_set_;
};

TEST_F(CacheActivationsTest, CachesTheFfnPairsInEvaluationOrder) {
  const ActivationCacheOptions options = Options("ffn");
  StagedOutputs staged;
  auto manifest = CacheActivations(options, staged);
  ASSERT_TRUE(manifest.ok()) << manifest.status();
  ASSERT_TRUE(staged.Commit().ok());
  EXPECT_EQ(manifest->rows(), 50);
  EXPECT_EQ(manifest->split(), "test");
  EXPECT_EQ(manifest->layer(), 1);
  EXPECT_EQ(manifest->hook_in(), "blocks.1.ffn.hook_in");
  EXPECT_EQ(manifest->hook_out(), "blocks.1.ffn.hook_out");
  EXPECT_EQ(manifest->d_in(), 16);
  EXPECT_EQ(manifest->d_out(), 16);
  EXPECT_EQ(manifest->sequence_length(), 8);
  EXPECT_EQ(manifest->checkpoint_sha256(), *Sha256OfFile(checkpoint_));
  EXPECT_EQ(manifest->tokens_manifest_sha256(),
            Sha256Hex(tokens_set_->manifest().SerializeAsString()));

  // Rows 0-15 are the first evaluation batch of 4 (seed 3) through block 1.
  auto set =
      ActivationSet::Open(options.out_dir + "/test.activations.textproto");
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ((*set)->rows(), 50);
  auto loaded = layers::LoadModel(checkpoint_);
  ASSERT_TRUE(loaded.ok());
  std::vector<torch::Tensor> inputs, outputs;
  loaded->model->FindHook("blocks.1.ffn.hook_in")
      ->Add(layers::CaptureHook(&inputs));
  loaded->model->FindHook("blocks.1.ffn.hook_out")
      ->Add(layers::CaptureHook(&outputs));
  auto sampler = BatchSampler::Create(tokens_set_.get(), 2, 8, 3);
  ASSERT_TRUE(sampler.ok());
  const TokenBatch batch = sampler->EvalBatch(0, 4);
  torch::NoGradGuard no_grad;
  loaded->model->Hidden(torch::from_blob(
      const_cast<int64_t*>(batch.inputs.data()), {2, 8}, torch::kLong));
  const auto [x, y] = (*set)->Range(0, 16);
  EXPECT_TRUE(torch::allclose(x, inputs.at(0).reshape({-1, 16})));
  EXPECT_TRUE(torch::allclose(y, outputs.at(0).reshape({-1, 16})));
}

TEST_F(CacheActivationsTest, AttentionKeepsWholeWindows) {
  ActivationCacheOptions options = Options("attn");
  options.site = "attn";
  StagedOutputs staged;
  auto manifest = CacheActivations(options, staged);
  ASSERT_TRUE(manifest.ok()) << manifest.status();
  // 50 rows in windows of 8: 6 whole windows.
  EXPECT_EQ(manifest->rows(), 48);
  EXPECT_EQ(manifest->hook_in(), "blocks.1.attn.hook_in");
}

TEST_F(CacheActivationsTest, RejectsBadLayerLengthAndSplit) {
  ActivationCacheOptions options = Options("bad");
  options.layer = 2;
  StagedOutputs staged;
  EXPECT_EQ(std::string(CacheActivations(options, staged).status().message()),
            "--layer 2 is not a block of the model");
  options.layer = 0;
  options.sequence_length = 16;
  EXPECT_EQ(std::string(CacheActivations(options, staged).status().message()),
            "--sequence_length 16 exceeds the model's context of 8");
  options.sequence_length = 0;
  options.batch = 1000;
  EXPECT_EQ(std::string(CacheActivations(options, staged).status().message()),
            "the split holds no full batch");
}

}  // namespace
}  // namespace sparse_layers::datasets
