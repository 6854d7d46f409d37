#include "models/checkpoints/fit_export.h"

#include <google/protobuf/text_format.h>
#include <torch/torch.h>

#include <cstdlib>
#include <string>

#include "gtest/gtest.h"
#include "models/checkpoints/checkpoint.h"
#include "models/checkpoints/safetensors.h"
#include "models/model_loader.h"
#include "models/tiny_gpt.h"

namespace sparse_layers::layers {
namespace {

std::string TempPath(const std::string& name) {
  return std::string(std::getenv("TEST_TMPDIR")) + "/" + name;
}

// The checkpoint of a tiny model with `replacement` (text format; empty: none).
std::string SaveFit(const std::string& name, const std::string& replacement) {
  config::ExperimentConfig config;
  config.set_name(name);
  *config.mutable_model() = testing::TinyModelConfig(20, 16, 2);
  config.mutable_runtime()->set_seed(5);
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(
      replacement, config.mutable_model()->mutable_replacement()));
  auto model = InitializeModel(config);
  EXPECT_TRUE(model.ok()) << model.status();
  CheckpointState state;
  google::protobuf::TextFormat::PrintToString(config, &state.config_text);
  const std::string path = TempPath(name + ".pt");
  EXPECT_TRUE(SaveCheckpoint(path, **model, nullptr, state).ok());
  return path;
}

// Every tensor of the file equals the fitted layer's parameter of that name,
// and there is no other.
void ExpectTheLayersParameters(const std::string& exported,
                               const torch::nn::Module& layer) {
  auto file = SafetensorsFile::Open(exported);
  ASSERT_TRUE(file.ok()) << file.status();
  const auto parameters = layer.named_parameters();
  EXPECT_EQ((*file)->Names().size(), parameters.size());
  for (const auto& item : parameters) {
    auto tensor = (*file)->ReadFloat(item.key(), item.value().sizes().vec());
    ASSERT_TRUE(tensor.ok()) << tensor.status();
    EXPECT_TRUE(torch::equal(*tensor, item.value())) << item.key();
  }
}

TEST(ExportFitTest, ATranscoderAtBlockOneWithItsSiteAndHooks) {
  const std::string fit = SaveFit("tc", R"(ffn: "skip_transcoder" layer: 1
                                           d_ffn: 32 top_k: 4)");
  const std::string out = TempPath("tc.safetensors");
  auto exported = ExportFit(fit, out);
  ASSERT_TRUE(exported.ok()) << exported.status();
  auto loaded = LoadReplacement(fit);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  ExpectTheLayersParameters(out, *loaded->layer);
  auto file = SafetensorsFile::Open(out);
  ASSERT_TRUE(file.ok());
  EXPECT_TRUE((*file)->CheckShape("encoder", {16, 32}).ok());
  EXPECT_TRUE((*file)->CheckShape("skip", {16, 16}).ok());
  const auto& metadata = (*file)->metadata();
  EXPECT_EQ(metadata.at("format"), "sparse_layers.fit.v1");
  EXPECT_EQ(metadata.at("layer_type"), "skip_transcoder");
  EXPECT_EQ(metadata.at("block"), "1");
  EXPECT_EQ(metadata.at("site"), "ffn");
  EXPECT_EQ(metadata.at("hook_in"), "blocks.1.ffn.hook_in");
  EXPECT_EQ(metadata.at("hook_out"), "blocks.1.ffn.hook_out");
  EXPECT_EQ(metadata.at("top_k"), "4");
  EXPECT_EQ(metadata.at("d_model"), "16");
  EXPECT_EQ(metadata.at("fit_sha256").size(), 64u);
  EXPECT_NE(metadata.at("replacement").find("\"skip_transcoder\""),
            std::string::npos);
}

// An SAE on the attention output reads that output; a Lorsa exports its
// heads' tensors.
TEST(ExportFitTest, AttentionSiteFits) {
  const std::string sae = SaveFit(
      "sae",
      R"(ffn: "topk_sae" site: ATTN on_output: true d_ffn: 32 top_k: 4)");
  auto exported = ExportFit(sae, TempPath("sae.safetensors"));
  ASSERT_TRUE(exported.ok()) << exported.status();
  EXPECT_EQ(exported->metadata.at("site"), "attn_output");
  EXPECT_EQ(exported->metadata.at("hook_in"), "blocks.0.attn.hook_out");

  const std::string lorsa =
      SaveFit("lorsa", R"(ffn: "lorsa" site: ATTN d_ffn: 4 top_k: 2)");
  const std::string out = TempPath("lorsa.safetensors");
  exported = ExportFit(lorsa, out);
  ASSERT_TRUE(exported.ok()) << exported.status();
  EXPECT_EQ(exported->metadata.at("site"), "attn");
  auto loaded = LoadReplacement(lorsa, FitKind::kAttentionSite);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  ExpectTheLayersParameters(out, *loaded->loaded.model->LorsaReplacement());
  EXPECT_EQ(exported->tensors.count("w_o"), 1u);
}

TEST(ExportFitTest, AModelWithoutAFitIsOneLine) {
  const std::string lm = SaveFit("lm", "");
  const auto exported = ExportFit(lm, TempPath("lm.safetensors"));
  ASSERT_FALSE(exported.ok());
  EXPECT_EQ(exported.status().message(),
            lm + " has no sparse replacement layer");
}

}  // namespace
}  // namespace sparse_layers::layers
