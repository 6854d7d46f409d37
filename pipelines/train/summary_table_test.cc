#include "pipelines/train/summary_table.h"

#include <cstdlib>
#include <string>
#include <vector>

#include "base/common/file_io.h"
#include "config/experiment.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pipelines/train/training.pb.h"

namespace sparse_layers::train {
namespace {

using ::testing::HasSubstr;

SummaryTableInput Summary(const std::string& name, double perplexity,
                          int64_t steps) {
  return {name + ".summary.textproto",
          "name: \"" + name + "\" steps: " + std::to_string(steps) +
              " validation_perplexity: " + std::to_string(perplexity) +
              " build_identity: \"blas: x\" stopped_by: \"a, \\\"b\\\"\"\n"};
}

SummaryTableInput Config(const std::string& name, int seed, int d_model,
                         const std::string& extra = "") {
  return {name + "_config.textproto",
          "name: \"" + name + "\"\nruntime { seed: " + std::to_string(seed) +
              " }\nmodel { d_model: " + std::to_string(d_model) + " " + extra +
              " }\nschedule { decay: COSINE }\n"};
}

SummaryTableOptions Options(std::vector<std::string> fields,
                            std::vector<std::string> config_fields) {
  SummaryTableOptions options;
  options.fields = std::move(fields);
  options.config_fields = std::move(config_fields);
  return options;
}

TEST(StripSeedSuffixTest, RemovesOnlyATrailingSeed) {
  EXPECT_EQ(StripSeedSuffix("dense_s1"), "dense");
  EXPECT_EQ(StripSeedSuffix("mohd_x2_no_shared_s12"), "mohd_x2_no_shared");
  EXPECT_EQ(StripSeedSuffix("mohd_x2_no_shared"), "mohd_x2_no_shared");
  EXPECT_EQ(StripSeedSuffix("dense"), "dense");
  EXPECT_EQ(StripSeedSuffix("dense_s"), "dense_s");
  EXPECT_EQ(StripSeedSuffix("dense_s1a"), "dense_s1a");
}

TEST(SummaryTableTest, OneRowPerSummaryWithItsConfig) {
  // Inputs out of order and mixed: rows come by arm and seed, configs matched
  // by name, not by position.
  const std::vector<SummaryTableInput> inputs = {
      Config("mohd_s2", 2, 64, "n_experts: 8 layer_options { mohd_shared: 3 }"),
      Summary("mohd_s2", 11.5, 20),
      Summary("dense_s1", 12.25, 20),
      Config("dense_s1", 1, 32),
      Summary("mohd_s1", 11.0, 20),
      Config("mohd_s1", 1, 64, "n_experts: 8 layer_options { mohd_shared: 3 }"),
  };
  absl::StatusOr<std::string> csv = SummaryTableCsv(
      Options({"name", "ppl=validation_perplexity", "steps"},
              {"seed=runtime.seed", "model.d_model", "model.n_experts",
               "shared=model.layer_options.mohd_shared", "schedule.decay",
               "model.layer_options.mohd_fusion"}),
      inputs);
  ASSERT_TRUE(csv.ok()) << csv.status();
  EXPECT_EQ(*csv,
            "arm,name,ppl,steps,seed,model.d_model,model.n_experts,shared,"
            "schedule.decay,model.layer_options.mohd_fusion\n"
            "dense,dense_s1,12.25,20,1,32,0,0,COSINE,false\n"
            "mohd,mohd_s1,11,20,1,64,8,3,COSINE,false\n"
            "mohd,mohd_s2,11.5,20,2,64,8,3,COSINE,false\n");
}

TEST(SummaryTableTest, ConstantColumnsFollowTheArm) {
  SummaryTableOptions options = Options({"steps"}, {});
  options.constant_columns = {"base=gelu", "site=ffn out"};
  absl::StatusOr<std::string> csv =
      SummaryTableCsv(options, {Summary("sae_s1", 1.0, 20)});
  ASSERT_TRUE(csv.ok()) << csv.status();
  EXPECT_EQ(*csv, "arm,base,site,steps\nsae,gelu,ffn out,20\n");
  options.constant_columns = {"base"};
  csv = SummaryTableCsv(options, {Summary("sae_s1", 1.0, 20)});
  ASSERT_FALSE(csv.ok());
  EXPECT_NE(csv.status().message().find("is not column=value"),
            std::string::npos);
}

TEST(SummaryTableTest, ConfigsAreOptionalWithoutConfigFields) {
  SummaryTableOptions options = Options({"validation_perplexity"}, {});
  options.arm_column = "";
  absl::StatusOr<std::string> csv = SummaryTableCsv(
      options, {Summary("b", 2.5, 1), Summary("a", 0.1, 1), Config("x", 1, 8)});
  ASSERT_TRUE(csv.ok()) << csv.status();
  EXPECT_EQ(*csv, "validation_perplexity\n0.1\n2.5\n");
}

TEST(SummaryTableTest, RowsAreGroupedByArmInSeedOrder) {
  absl::StatusOr<std::string> csv = SummaryTableCsv(
      Options({"name"}, {}),
      {Summary("x2_s10", 1, 1), Summary("x2_no_fusion_s1", 1, 1),
       Summary("x2_s2", 1, 1), Summary("x2", 1, 1), Summary("a_s1", 1, 1)});
  ASSERT_TRUE(csv.ok()) << csv.status();
  EXPECT_EQ(*csv,
            "arm,name\na,a_s1\nx2,x2\nx2,x2_s2\nx2,x2_s10\n"
            "x2_no_fusion,x2_no_fusion_s1\n");
}

TEST(SummaryTableTest, RunsSharingANameAreToldApartByTheirFiles) {
  // A chess model's seeds share the config name "gelu"; their targets do not.
  // "gelu.summary.textproto" -> "out/<run>.summary.textproto" (likewise the
  // config).
  auto named = [](SummaryTableInput input, const std::string& run) {
    input.path = "out/" + run + input.path.substr(std::string("gelu").size());
    return input;
  };
  const std::vector<SummaryTableInput> inputs = {
      named(Summary("gelu", 4.0, 30), "gelu_s2"),
      named(Config("gelu", 2, 64), "gelu_s2"),
      named(Summary("gelu", 5.0, 30), "gelu_s1"),
      named(Config("gelu", 1, 64), "gelu_s1")};
  EXPECT_THAT(SummaryTableCsv(Options({"steps"}, {"seed=runtime.seed"}), inputs)
                  .status()
                  .message(),
              HasSubstr("two summaries named 'gelu'"));
  SummaryTableOptions options =
      Options({"validation_perplexity"}, {"seed=runtime.seed"});
  options.name_from_path = true;
  absl::StatusOr<std::string> csv = SummaryTableCsv(options, inputs);
  ASSERT_TRUE(csv.ok()) << csv.status();
  EXPECT_EQ(*csv, "arm,validation_perplexity,seed\ngelu,5,1\ngelu,4,2\n");
  EXPECT_EQ(*RunNameFromPath("a/b/moe_x_s3_config.textproto"), "moe_x_s3");
  EXPECT_THAT(RunNameFromPath("a/gelu.pt").status().message(),
              HasSubstr("no run name"));
}

TEST(SummaryTableTest, StringsAreQuotedAndNumbersReadBackExactly) {
  SummaryTableInput summary = {
      "s.summary.textproto",
      "name: \"s\" stopped_by: \"a, \\\"b\\\"\" flops: 0.30000000000000004 "
      "validation_loss: 1e-08\n"};
  absl::StatusOr<std::string> csv = SummaryTableCsv(
      Options({"stopped_by", "flops", "validation_loss"}, {}), {summary});
  ASSERT_TRUE(csv.ok()) << csv.status();
  EXPECT_EQ(*csv,
            "arm,stopped_by,flops,validation_loss\n"
            "s,\"a, \"\"b\"\"\",0.30000000000000004,1e-08\n");
}

TEST(SummaryTableTest, UnknownFieldsAreErrors) {
  absl::StatusOr<std::string> csv =
      SummaryTableCsv(Options({"validation_ppl"}, {}), {Summary("a", 1, 1)});
  ASSERT_FALSE(csv.ok());
  EXPECT_THAT(csv.status().message(),
              HasSubstr("TrainingSummary field 'validation_ppl'"));
  csv = SummaryTableCsv(Options({}, {"model.d_modl"}),
                        {Summary("a", 1, 1), Config("a", 1, 8)});
  ASSERT_FALSE(csv.ok());
  EXPECT_THAT(csv.status().message(),
              HasSubstr("ModelConfig has no field 'd_modl'"));
}

TEST(SummaryTableTest, OnlyScalarsAreColumns) {
  EXPECT_THAT(
      SummaryTableCsv(Options({"build_identity"}, {}), {Summary("a", 1, 1)})
          .status()
          .message(),
      HasSubstr("is repeated"));
  EXPECT_THAT(SummaryTableCsv(Options({}, {"model"}),
                              {Summary("a", 1, 1), Config("a", 1, 8)})
                  .status()
                  .message(),
              HasSubstr("is a message"));
  EXPECT_THAT(SummaryTableCsv(Options({}, {"runtime.seed.x"}),
                              {Summary("a", 1, 1), Config("a", 1, 8)})
                  .status()
                  .message(),
              HasSubstr("'seed' is not a message"));
}

TEST(SummaryTableTest, EverySummaryNeedsItsConfigWhenConfigFieldsAreAsked) {
  absl::StatusOr<std::string> csv = SummaryTableCsv(
      Options({"steps"}, {"runtime.seed"}),
      {Summary("a_s1", 1, 1), Summary("a_s2", 1, 1), Config("a_s1", 1, 8)});
  ASSERT_FALSE(csv.ok());
  EXPECT_THAT(csv.status().message(), HasSubstr("summary 'a_s2'"));
  csv = SummaryTableCsv(
      Options({"steps"}, {"runtime.seed"}),
      {Summary("a_s1", 1, 1), Config("a_s1", 1, 8), Config("a_s3", 3, 8)});
  ASSERT_FALSE(csv.ok());
  EXPECT_THAT(csv.status().message(), HasSubstr("config 'a_s3'"));
}

TEST(SummaryTableTest, AmbiguousOrUnreadableInputsAreErrors) {
  // A bare name parses as either message.
  EXPECT_THAT(
      SummaryTableCsv(Options({"steps"}, {}), {{"n.textproto", "name: \"n\""}})
          .status()
          .message(),
      HasSubstr("parses as both"));
  EXPECT_THAT(SummaryTableCsv(Options({"steps"}, {}),
                              {{"bad.textproto", "name: \"n\" bogus: 1"}})
                  .status()
                  .message(),
              HasSubstr("bad.textproto: neither a TrainingSummary"));
  EXPECT_THAT(SummaryTableCsv(Options({"steps"}, {}),
                              {Summary("a", 1, 1), Summary("a", 2, 1)})
                  .status()
                  .message(),
              HasSubstr("two summaries named 'a'"));
  EXPECT_THAT(SummaryTableCsv(Options({"steps"}, {}), {Config("a", 1, 8)})
                  .status()
                  .message(),
              HasSubstr("no training summary"));
  EXPECT_TRUE(
      SummaryTableCsv(Options({"steps", "s=steps"}, {}), {Summary("a", 1, 1)})
          .ok());
  EXPECT_THAT(
      SummaryTableCsv(Options({"steps", "steps"}, {}), {Summary("a", 1, 1)})
          .status()
          .message(),
      HasSubstr("column 'steps' is asked for twice"));
}

TEST(SummaryTableTest, ReadsFiles) {
  const std::string dir = std::getenv("TEST_TMPDIR");
  std::vector<std::string> paths;
  for (const SummaryTableInput& input :
       {Summary("dense_s2", 3.5, 7), Config("dense_s2", 2, 16)}) {
    paths.push_back(dir + "/" + input.path);
    ASSERT_TRUE(WriteFileAtomically(paths.back(), input.contents).ok());
  }
  absl::StatusOr<std::string> csv = SummaryTableFromFiles(
      Options({"validation_perplexity"}, {"seed=runtime.seed"}), paths);
  ASSERT_TRUE(csv.ok()) << csv.status();
  EXPECT_EQ(*csv, "arm,validation_perplexity,seed\ndense,3.5,2\n");
  paths.push_back(dir + "/missing.textproto");
  EXPECT_FALSE(SummaryTableFromFiles(Options({"steps"}, {}), paths).ok());
}

}  // namespace
}  // namespace sparse_layers::train
