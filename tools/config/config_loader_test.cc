#include "tools/config/config_loader.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sparse_layers::config {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

const char kData[] = "tools/config/testdata/";

std::string ErrorOf(absl::string_view text) {
  absl::StatusOr<ExperimentConfig> config =
      ParseExperimentConfig(text, "cfg.textproto");
  EXPECT_FALSE(config.ok()) << "accepted: " << text;
  return std::string(config.status().message());
}

TEST(ConfigLoaderTest, LoadsACompleteConfig) {
  absl::StatusOr<ExperimentConfig> config =
      LoadExperimentConfig({std::string(kData) + "base.textproto"});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->name(), "tiny_gpt");
  EXPECT_EQ(config->runtime().seed(), 1234u);
  EXPECT_EQ(config->model().d_model(), 128);
  EXPECT_EQ(config->model().positions(), "rotary");
  EXPECT_DOUBLE_EQ(config->optimizer().learning_rate(), 3e-4);
  EXPECT_EQ(config->schedule().decay(), ScheduleConfig::COSINE);
  EXPECT_EQ(config->budget().max_steps(), 1000);
}

TEST(ConfigLoaderTest, LaterFilesOverrideEarlierOnes) {
  absl::StatusOr<ExperimentConfig> config =
      LoadExperimentConfig({std::string(kData) + "base.textproto",
                            std::string(kData) + "smoke.textproto"});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->model().context_length(), 64);
  EXPECT_EQ(config->model().d_model(), 128);  // kept from the base file
  EXPECT_EQ(config->budget().max_steps(), 20);
}

TEST(ConfigLoaderTest, TypeErrorGivesPositionAndField) {
  absl::StatusOr<ExperimentConfig> config =
      LoadExperimentConfig({std::string(kData) + "bad_type.textproto"});
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().message(),
            "tools/config/testdata/bad_type.textproto:3:12: field 'd_model': "
            "Expected integer, got: twelve");
}

TEST(ConfigLoaderTest, UnknownFieldIsNamed) {
  EXPECT_EQ(ErrorOf("name: \"x\"\nmodel {\n  d_modle: 3\n}\n"),
            "cfg.textproto:3:10: field 'd_modle': Message type "
            "\"sparse_layers.config.ModelConfig\" has no field named "
            "\"d_modle\".");
}

TEST(ConfigLoaderTest, UnknownEnumValueIsNamed) {
  // protobuf reports this one at the next token; the loader moves it back to
  // the field.
  EXPECT_EQ(ErrorOf("schedule {\n  decay: LINEAR\n}\n"),
            "cfg.textproto:2:3: field 'decay': Unknown enumeration value of "
            "\"LINEAR\" for field \"decay\".");
}

TEST(ConfigLoaderTest, SyntaxErrorGivesPosition) {
  EXPECT_THAT(ErrorOf("model {\n  d_model: 3\n"),
              StartsWith("cfg.textproto:3:"));
}

TEST(ConfigLoaderTest, ValidationErrorPointsAtTheField) {
  absl::StatusOr<ExperimentConfig> config =
      LoadExperimentConfig({std::string(kData) + "bad_heads.textproto"});
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().message(),
            "tools/config/testdata/bad_heads.textproto:8:3: field "
            "'model.n_heads': d_model 100 is not divisible by n_heads 3");
}

TEST(ConfigLoaderTest, ValidationErrorNamesTheOverlayThatSetTheField) {
  // The overlay sets sequence_length 64; a base with context 32 makes it
  // invalid.
  absl::StatusOr<ExperimentConfig> config = ParseExperimentConfig(
      "model { architecture: \"gpt\" vocab_size: 8 context_length: 32 "
      "d_model: 8 n_layers: 1 n_heads: 2 }\n"
      "data { batch_size: 2 sequence_length: 64 }\n",
      "cfg.textproto");
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().message(),
            "cfg.textproto:2:22: field 'data.sequence_length': 64 exceeds "
            "model.context_length 32");
}

TEST(ConfigLoaderTest, UnsetRequiredFieldPointsAtItsMessage) {
  EXPECT_EQ(ErrorOf("name: \"x\"\nschedule { warmup_steps: 10 }\n"),
            "cfg.textproto:2:1: field 'schedule.decay': must be set "
            "(CONSTANT, COSINE or INVERSE_SQRT)");
  EXPECT_EQ(ErrorOf("budget {\n}\n"),
            "cfg.textproto:1:1: field 'budget': set at least one of "
            "max_steps, max_tokens, max_flops");
}

TEST(ConfigLoaderTest, RangeChecks) {
  EXPECT_THAT(ErrorOf("runtime { threads: -1 }"),
              HasSubstr("field 'runtime.threads': must be >= 0"));
  EXPECT_THAT(ErrorOf("runtime { device: \"tpu\" }"),
              HasSubstr("field 'runtime.device'"));
  EXPECT_THAT(ErrorOf("optimizer { learning_rate: 1e-3 beta2: 1.0 }"),
              HasSubstr("field 'optimizer.beta2': must be in [0, 1)"));
  EXPECT_THAT(ErrorOf("schedule { decay: COSINE min_lr_ratio: 2 }"),
              HasSubstr("field 'schedule.min_lr_ratio'"));
}

TEST(ConfigLoaderTest, MissingFileIsOneClearLine) {
  absl::StatusOr<ExperimentConfig> config =
      LoadExperimentConfig({"no/such/file.textproto"});
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(config.status().message(),
            "no/such/file.textproto: cannot read config (No such file or "
            "directory)");
}

}  // namespace
}  // namespace sparse_layers::config
