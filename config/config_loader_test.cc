#include "config/config_loader.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "config/layer_shapes.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sparse_layers::config {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

const char kData[] = "config/testdata/";

// The catalog the layers would register (layers/ffn, layers/mohd,
// layers/replacement, layers/attention): the validator is tested against the
// shapes, apart from which layers a binary links.
[[maybe_unused]] const bool kShapes = [] {
  using config::AttentionShape;
  using config::FfnShape;
  for (const char* name : {"gelu_mlp", "geglu", "gpt_oss_glu"}) {
    RegisterFfnShape(name, FfnShape::kDense);
  }
  for (const char* name : {"switch", "moe_x", "gpt_oss_moe"}) {
    RegisterFfnShape(name, FfnShape::kMixture);
  }
  for (const char* name : {"sgatlin", "peer"}) {
    RegisterFfnShape(name, FfnShape::kProductKey);
  }
  RegisterFfnShape("mohd_swiglu", FfnShape::kMohd);
  for (const char* name : {"transcoder", "skip_transcoder", "topk_sae",
                           "batch_topk_sae", "relu_sae", "jump_relu_sae"}) {
    RegisterFfnShape(name, FfnShape::kTopK);
  }
  for (const char* name : {"mxd_gelu", "mxd_relu", "mxd_swiglu", "cp_moe"}) {
    RegisterFfnShape(name, FfnShape::kMxd);
  }
  RegisterAttentionShape("mha", AttentionShape::kMultiHead);
  RegisterAttentionShape("mohd", AttentionShape::kMohd);
  RegisterAttentionShape("lorsa", AttentionShape::kLorsa);
  return true;
}();

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
  EXPECT_EQ(config->model().positions(), ModelConfig::ROTARY);
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
            "config/testdata/bad_type.textproto:3:12: field 'd_model': "
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
            "config/testdata/bad_heads.textproto:8:3: field "
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
              HasSubstr("field 'runtime.threads': must be in [0, 1024]"));
  // A closed set is a proto enum: the parser names file, line and column.
  EXPECT_EQ(ErrorOf("runtime { device: TPU }"),
            "cfg.textproto:1:11: field 'device': Unknown enumeration value of "
            "\"TPU\" for field \"device\".");
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

// A valid base config; each case merges an overlay into it, as a scale file
// does, and expects the overlay's field to be named with the constraint.
class ConstraintTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::string(std::getenv("TEST_TMPDIR")) + "/constraints";
    std::filesystem::create_directories(dir_);
    base_ = Write("base.textproto",
                  "name: \"v\"\n"
                  "model { vocab_size: 64 context_length: 16 d_model: 16 "
                  "n_layers: 2 n_heads: 2 }\n"
                  "data { batch_size: 2 sequence_length: 16 }\n"
                  "optimizer { learning_rate: 1e-3 }\n"
                  "schedule { decay: CONSTANT }\n"
                  "budget { max_steps: 1 }\n");
  }

  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }

  // The error for base + `overlay`, from "field '" on (the position before it
  // is covered above).
  std::string Reject(const std::string& overlay) {
    absl::StatusOr<ExperimentConfig> config =
        LoadExperimentConfig({base_, Write("overlay.textproto", overlay)});
    if (config.ok()) return "accepted: " + overlay;
    const std::string message(config.status().message());
    const size_t field = message.find("field '");
    return field == std::string::npos ? message : message.substr(field);
  }

  std::string dir_;
  std::string base_;
};

TEST_F(ConstraintTest, BaseIsValid) {
  EXPECT_EQ(Reject("name: \"w\""), "accepted: name: \"w\"");
}

TEST_F(ConstraintTest, ErrorNamesTheOverlayLine) {
  absl::StatusOr<ExperimentConfig> config = LoadExperimentConfig(
      {base_, Write("overlay.textproto",
                    "model {\n  ffn: \"switch\"\n  n_experts: 4\n}\n")});
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().message(),
            dir_ +
                "/overlay.textproto:1:1: field 'model.top_k': switch needs "
                "top_k in [1, n_experts 4], got 0");
}

TEST_F(ConstraintTest, ModelSizes) {
  EXPECT_EQ(Reject("model { vocab_size: 300000 }"),
            "field 'model.vocab_size': must be <= 262144");
  // Llama 3's vocabulary (uint32 token shards).
  EXPECT_EQ(Reject("model { vocab_size: 128256 }"),
            "accepted: model { vocab_size: 128256 }");
  EXPECT_EQ(Reject("model { n_layers: 0 }"),
            "field 'model.n_layers': must be > 0");
  EXPECT_EQ(Reject("model { d_model: 2000000 }"),
            "field 'model.d_model': must be <= 1048576");
  EXPECT_EQ(Reject("model { n_heads: 3 }"),
            "field 'model.n_heads': d_model 16 is not divisible by n_heads 3");
  EXPECT_EQ(Reject("model { d_ffn: -1 }"), "field 'model.d_ffn': must be >= 0");
  EXPECT_EQ(Reject("model { top_k: -2 }"), "field 'model.top_k': must be >= 0");
  EXPECT_EQ(Reject("model { ffn_alpha: nan }"),
            "field 'model.ffn_alpha': must be a finite number in [0, 1024]");
  EXPECT_EQ(Reject("model { embedding_width: 8 tie_embeddings: false }"),
            "field 'model.embedding_width': 8 must be 0 or above d_model 16");
  EXPECT_EQ(Reject("model { embedding_width: 32 tie_embeddings: true }"),
            "field 'model.embedding_width': needs tie_embeddings: false");
}

TEST_F(ConstraintTest, RegistryNamesAndEnums) {
  EXPECT_EQ(Reject("model { architecture: \"llama\" }"),
            "field 'model.architecture': must be \"gpt\"");
  EXPECT_EQ(Reject("model { attention: \"linear\" }"),
            "field 'model.attention': unknown attention 'linear'; known: "
            "lorsa, mha, mohd");
  EXPECT_THAT(Reject("model { ffn: \"gelu\" }"),
              StartsWith("field 'model.ffn': unknown ffn 'gelu'; known: "
                         "batch_topk_sae, cp_moe, geglu, gelu_mlp, "));
  // Closed sets are proto enums, rejected by the parser (file:line:column
  // before the field), a string where an enum value belongs included.
  EXPECT_EQ(Reject("model { positions: ALIBI }"),
            "field 'positions': Unknown enumeration value of \"ALIBI\" for "
            "field \"positions\".");
  EXPECT_EQ(Reject("model { norm: \"rmsnorm\" }"),
            "field 'model': Expected integer or identifier, got: "
            "\"rmsnorm\"");
  EXPECT_EQ(Reject("model { layer_options { router_sigma: MAD } }"),
            "field 'router_sigma': Unknown enumeration value of \"MAD\" for "
            "field \"router_sigma\".");
  EXPECT_EQ(Reject("model { layer_options { mohd_scaling: SQRT } }"),
            "field 'mohd_scaling': Unknown enumeration value of \"SQRT\" for "
            "field \"mohd_scaling\".");
  EXPECT_EQ(Reject("model { positions: ROTARY norm: RMS_NORM layer_options { "
                   "router_sigma: VARIANCE mohd_scaling: NONE } }"),
            "accepted: model { positions: ROTARY norm: RMS_NORM "
            "layer_options { router_sigma: VARIANCE mohd_scaling: NONE } }");
}

TEST_F(ConstraintTest, LayerConstructorChecks) {
  // Each of these made a layer constructor throw inside train.
  EXPECT_EQ(
      Reject("model { ffn: \"switch\" n_experts: 4 top_k: 0 }"),
      "field 'model.top_k': switch needs top_k in [1, n_experts 4], got 0");
  EXPECT_EQ(Reject("model { ffn: \"gpt_oss_moe\" }"),
            "field 'model.n_experts': gpt_oss_moe needs n_experts > 0");
  EXPECT_EQ(Reject("model { ffn: \"moe_x\" n_experts: 2 top_k: 3 }"),
            "field 'model.top_k': top_k 3 exceeds n_experts 2");
  EXPECT_EQ(Reject("model { d_model: 18 positions: ROTARY }"),
            "field 'model.positions': rotary needs an even head dim; d_model "
            "18 / n_heads 2 = 9");
  EXPECT_EQ(Reject("model { ffn: \"sgatlin\" d_ffn: 30 }"),
            "field 'model.d_ffn': sgatlin needs a perfect-square d_ffn (n^2 "
            "product-key experts), got 30");
  EXPECT_EQ(Reject("model { ffn: \"peer\" d_ffn: 16 top_k: 4 }"),
            "field 'model.top_k': peer needs top_k 4 below sqrt(d_ffn) = 4");
  EXPECT_EQ(Reject("model { ffn: \"sgatlin\" d_ffn: 64 }"),
            "field 'model.top_k': sgatlin needs top_k 8 below sqrt(d_ffn) = 8");
  EXPECT_EQ(Reject("model { ffn: \"mohd_swiglu\" n_experts: 3 top_k: 1 }"),
            "field 'model.n_experts': d_model 16 is not divisible by "
            "n_experts 3");
  EXPECT_EQ(Reject("model { ffn: \"mohd_swiglu\" n_experts: 4 }"),
            "field 'model.top_k': mohd_swiglu needs top_k in [1, n_experts "
            "4]");
  // Lorsa's QK width and initialisation (arXiv:2504.20938 App. B): Lorsa only;
  // a copy of the attention's QK needs its head width and a multiple of its
  // heads (the base: 2 heads of width 8).
  EXPECT_EQ(Reject("model { replacement { ffn: \"transcoder\" top_k: 4 "
                   "expansion: 2 qk_dim: 4 } }"),
            "field 'model.replacement.qk_dim': only 'lorsa' has one");
  EXPECT_EQ(Reject("model { replacement { ffn: \"lorsa\" site: ATTN "
                   "top_k: 4 d_ffn: 16 qk_dim: 4 qk_init: QK_FROM_ATTENTION "
                   "} }"),
            "field 'model.replacement.qk_init': copying the attention's QK "
            "needs qk_dim = its head width 8 and qk_heads a multiple of its 2 "
            "heads, got 4 and 2");
  EXPECT_EQ(Reject("model { replacement { ffn: \"lorsa\" site: ATTN "
                   "top_k: 4 d_ffn: 16 qk_heads: 4 qk_init: "
                   "QK_FROM_ATTENTION_FROZEN } }"),
            "accepted: model { replacement { ffn: \"lorsa\" site: ATTN "
            "top_k: 4 d_ffn: 16 qk_heads: 4 qk_init: "
            "QK_FROM_ATTENTION_FROZEN } }");
  EXPECT_EQ(Reject("model { qk_norm: true replacement { ffn: \"lorsa\" "
                   "site: ATTN top_k: 4 d_ffn: 16 qk_init: QK_FROM_ATTENTION "
                   "} }"),
            "field 'model.replacement.qk_init': a Lorsa has no QK norm, so it "
            "cannot copy a qk_norm attention's QK");
  EXPECT_EQ(Reject("model { positions: ROTARY architecture_options { "
                   "rotary_dims: 8 } replacement { ffn: \"lorsa\" site: ATTN "
                   "top_k: 4 d_ffn: 16 qk_dim: 4 } }"),
            "field 'model.replacement.qk_dim': the base turns 8 rotary dims of "
            "each head; qk_dim 4 is smaller");
  EXPECT_EQ(Reject("model { attention: \"mohd\" n_experts: 4 top_k: 2 "
                   "layer_options { mohd_shared: 3 } }"),
            "field 'model.layer_options.mohd_shared': 3 shared sub-dims "
            "exceed top_k 2");
  EXPECT_EQ(Reject("model { layer_options { mohd_shared: -1 } }"),
            "field 'model.layer_options.mohd_shared': must be >= 0");
  EXPECT_EQ(Reject("model { attention: \"mohd\" n_experts: 4 top_k: 2 "
                   "attention_inner: 6 }"),
            "field 'model.attention_inner': MoHD attention needs an inner "
            "width 6 that splits into n_heads 2 even (rotary) heads");
  EXPECT_EQ(Reject("model { attention: \"lorsa\" layer_options { "
                   "lorsa_ov_heads: 15 } }"),
            "field 'model.layer_options.lorsa_ov_heads': 15 OV heads are not "
            "a multiple of n_heads 2");
  EXPECT_EQ(Reject("model { attention: \"lorsa\" layer_options { "
                   "lorsa_top_k: 17 } }"),
            "field 'model.layer_options.lorsa_top_k': 17 exceeds the 16 OV "
            "heads");
  EXPECT_EQ(Reject("model { attention: \"lorsa\" qk_norm: true }"),
            "field 'model.qk_norm': needs attention 'mha'");
  EXPECT_EQ(Reject("model { ffn: \"transcoder\" top_k: 0 }"),
            "field 'model.top_k': transcoder needs top_k in [1, d_ffn 64], "
            "got 0");
  EXPECT_EQ(Reject("model { ffn: \"mxd_gelu\" top_k: 2 }"),
            "field 'model.n_experts': mxd_gelu needs n_experts > 0");
  EXPECT_EQ(Reject("model { layer_options { load_balance_weight: nan } }"),
            "field 'model.layer_options.load_balance_weight': must be a finite "
            "number in [0, 1000]");
}

TEST_F(ConstraintTest, ReplacementOptions) {
  EXPECT_EQ(Reject("model { replacement { ffn: \"transcoder\" layer: 2 "
                   "top_k: 4 expansion: 2 } }"),
            "field 'model.replacement.layer': block 2 is not in [0, n_layers "
            "2)");
  EXPECT_EQ(Reject("model { replacement { ffn: \"transcoder\" top_k: 4 } }"),
            "field 'model.replacement.d_ffn': set d_ffn or an expansion");
  EXPECT_EQ(Reject("model { replacement { ffn: \"transcoder\" top_k: 0 "
                   "expansion: 2 } }"),
            "field 'model.replacement.top_k': transcoder needs top_k in [1, "
            "d_ffn 32], got 0");
  EXPECT_EQ(Reject("model { replacement { ffn: \"topk_sae\" top_k: 40 "
                   "expansion: 2 on_output: true } }"),
            "field 'model.replacement.top_k': topk_sae needs top_k in [1, "
            "d_ffn 32], got 40");
  EXPECT_EQ(Reject("model { replacement { ffn: \"gelu_mlp\" top_k: 4 "
                   "expansion: 2 } }"),
            "field 'model.replacement.ffn': 'gelu_mlp' is not a replacement "
            "layer (batch_topk_sae, jump_relu_sae, relu_sae, skip_transcoder, "
            "topk_sae, transcoder, cp_moe, mxd_gelu, mxd_relu, mxd_swiglu, "
            "lorsa)");
  EXPECT_EQ(Reject("model { replacement { ffn: \"cp_moe\" top_k: 4 "
                   "expansion: 8 } }"),
            "field 'model.replacement.cp_rank_fraction': cp_moe needs "
            "cp_rank_fraction in (0, 1], got 0");
  EXPECT_EQ(Reject("model { replacement { ffn: \"cp_moe\" top_k: 4 "
                   "expansion: 8 cp_rank_fraction: 1.5 } }"),
            "field 'model.replacement.cp_rank_fraction': cp_moe needs "
            "cp_rank_fraction in (0, 1], got 1.5");
  EXPECT_EQ(Reject("model { replacement { ffn: \"transcoder\" top_k: 4 "
                   "expansion: 2 cp_rank_fraction: 0.5 } }"),
            "field 'model.replacement.cp_rank_fraction': only cp_moe has a "
            "decoder rank");
  EXPECT_EQ(Reject("model { replacement { ffn: \"cp_moe\" top_k: 4 "
                   "expansion: 8 cp_rank_fraction: 0.25 } }"),
            "accepted: model { replacement { ffn: \"cp_moe\" top_k: 4 "
            "expansion: 8 cp_rank_fraction: 0.25 } }");
  // Sparsity rules: the SAE names fix theirs; a penalty exactly where the rule
  // has one; no K where it has none.
  EXPECT_EQ(Reject("model { replacement { ffn: \"relu_sae\" expansion: 2 "
                   "on_output: true sparsity_penalty: -1 } }"),
            "field 'model.replacement.sparsity_penalty': RELU_L1 needs a "
            "finite sparsity_penalty >= 0, got -1");
  EXPECT_EQ(Reject("model { replacement { ffn: \"jump_relu_sae\" top_k: 4 "
                   "expansion: 2 on_output: true sparsity_penalty: 0.1 } }"),
            "field 'model.replacement.top_k': JUMP_RELU sets no K (its penalty "
            "sets the sparsity); leave top_k unset");
  EXPECT_EQ(Reject("model { replacement { ffn: \"topk_sae\" top_k: 4 "
                   "expansion: 2 on_output: true sparsity: JUMP_RELU } }"),
            "field 'model.replacement.sparsity': 'topk_sae' fixes its sparsity "
            "by its name (topk_sae, batch_topk_sae, relu_sae, jump_relu_sae); "
            "leave sparsity unset");
  EXPECT_EQ(Reject("model { replacement { ffn: \"batch_topk_sae\" top_k: 4 "
                   "expansion: 2 on_output: true sparsity_penalty: 0.1 } }"),
            "field 'model.replacement.sparsity_penalty': BATCH_TOPK has no "
            "penalty; only RELU_L1 and JUMP_RELU take sparsity_penalty");
  EXPECT_EQ(Reject("model { replacement { ffn: \"transcoder\" top_k: 4 "
                   "expansion: 2 jump_relu_bandwidth: 0.01 } }"),
            "field 'model.replacement.jump_relu_bandwidth': only JUMP_RELU has "
            "a bandwidth, finite and >= 0 (0: 0.001)");
  EXPECT_EQ(Reject("model { replacement { ffn: \"topk_sae\" top_k: 4 "
                   "expansion: 2 on_output: true "
                   "jump_relu_initial_threshold: 0.1 } }"),
            "field 'model.replacement.jump_relu_initial_threshold': only "
            "JUMP_RELU has an initial threshold, finite and >= 0 (0: 0.001)");
  EXPECT_EQ(Reject("model { replacement { ffn: \"jump_relu_sae\" "
                   "expansion: 2 on_output: true sparsity_penalty: 0.1 "
                   "jump_relu_initial_threshold: -0.1 } }"),
            "field 'model.replacement.jump_relu_initial_threshold': only "
            "JUMP_RELU has an initial threshold, finite and >= 0 (0: 0.001)");
  EXPECT_EQ(Reject("model { replacement { ffn: \"jump_relu_sae\" "
                   "expansion: 2 on_output: true sparsity_penalty: 0.1 "
                   "jump_relu_initial_threshold: 0.1 } }"),
            "accepted: model { replacement { ffn: \"jump_relu_sae\" "
            "expansion: 2 on_output: true sparsity_penalty: 0.1 "
            "jump_relu_initial_threshold: 0.1 } }");
  EXPECT_EQ(Reject("model { replacement { ffn: \"transcoder\" expansion: 2 "
                   "sparsity: RELU_L1 sparsity_penalty: 0.01 } }"),
            "accepted: model { replacement { ffn: \"transcoder\" expansion: 2 "
            "sparsity: RELU_L1 sparsity_penalty: 0.01 } }");
  EXPECT_EQ(Reject("model { replacement { ffn: \"cp_moe\" expansion: 8 "
                   "cp_rank_fraction: 0.25 sparsity: RELU_L1 "
                   "sparsity_penalty: 0.1 } }"),
            "field 'model.replacement.sparsity': cp_moe has no decoder rows "
            "to weight an L1 by (its factors absorb the codes' scale); use "
            "TOPK, BATCH_TOPK or JUMP_RELU");
  EXPECT_EQ(Reject("model { replacement { ffn: \"mxd_gelu\" top_k: 30 "
                   "n_experts: 20 sparsity: BATCH_TOPK } }"),
            "field 'model.replacement.top_k': mxd_gelu needs top_k in [1, "
            "n_experts 20], got 30");
  EXPECT_EQ(Reject("model { replacement { ffn: \"batch_topk_sae\" top_k: 4 "
                   "expansion: 2 on_output: true } }"),
            "accepted: model { replacement { ffn: \"batch_topk_sae\" top_k: 4 "
            "expansion: 2 on_output: true } }");
  EXPECT_THAT(Reject("model { replacement { ffn: \"tc\" top_k: 4 "
                     "expansion: 2 } }"),
              StartsWith("field 'model.replacement.ffn': unknown ffn 'tc'"));
  EXPECT_EQ(Reject("model { replacement { ffn: \"mxd_gelu\" top_k: 4 "
                   "expansion: 2 } }"),
            "field 'model.replacement.n_experts': mxd_gelu needs n_experts > "
            "0, or an expansion whose Transcoder is larger than the MxD's MLP");
  EXPECT_EQ(Reject("model { replacement { ffn: \"transcoder\" top_k: 4 "
                   "expansion: 2 site: MLP } }"),
            "field 'site': Unknown enumeration value of \"MLP\" for field "
            "\"site\".");
  EXPECT_EQ(Reject("model { replacement { ffn: \"lorsa\" top_k: 4 d_ffn: 8 "
                   "} }"),
            "field 'model.replacement.ffn': at site ATTN use 'lorsa' or an "
            "on_output SAE; 'lorsa' only there");
  EXPECT_EQ(Reject("model { replacement { ffn: \"lorsa\" site: ATTN "
                   "top_k: 4 d_ffn: 15 } }"),
            "field 'model.replacement.d_ffn': lorsa's 15 OV heads are not a "
            "multiple of qk_heads 2");
  EXPECT_EQ(Reject("model { replacement { ffn: \"lorsa\" site: ATTN "
                   "top_k: 9 d_ffn: 8 } }"),
            "field 'model.replacement.top_k': lorsa needs top_k in [1, OV "
            "heads 8], got 9");
  EXPECT_EQ(Reject("model { attention: \"mohd\" n_experts: 4 top_k: 2 "
                   "replacement { ffn: \"lorsa\" site: ATTN top_k: 2 "
                   "d_ffn: 8 } }"),
            "field 'model.replacement.site': site ATTN needs model.attention "
            "'mha'");
  EXPECT_EQ(Reject("model { replacement { ffn: \"transcoder\" top_k: 4 "
                   "expansion: -1 } }"),
            "field 'model.replacement.expansion': must be in [0, 1048576]");
}

TEST_F(ConstraintTest, TrainingNumbersAreFinite) {
  EXPECT_EQ(Reject("optimizer { learning_rate: nan }"),
            "field 'optimizer.learning_rate': must be a finite number in (0, "
            "1]");
  EXPECT_EQ(Reject("optimizer { learning_rate: inf }"),
            "field 'optimizer.learning_rate': must be a finite number in (0, "
            "1]");
  EXPECT_EQ(Reject("optimizer { weight_decay: nan }"),
            "field 'optimizer.weight_decay': must be a finite number in [0, "
            "10]");
  EXPECT_EQ(Reject("optimizer { weight_decay: -0.1 }"),
            "field 'optimizer.weight_decay': must be a finite number in [0, "
            "10]");
  EXPECT_EQ(Reject("optimizer { beta1: nan }"),
            "field 'optimizer.beta1': must be in [0, 1)");
  EXPECT_EQ(Reject("optimizer { epsilon: -1 }"),
            "field 'optimizer.epsilon': must be a finite number in [0, 1] (0 = "
            "1e-8)");
  EXPECT_EQ(Reject("optimizer { gradient_clip_norm: inf }"),
            "field 'optimizer.gradient_clip_norm': must be a finite number >= "
            "0 (0 = no clipping)");
  EXPECT_EQ(Reject("schedule { min_lr_ratio: nan }"),
            "field 'schedule.min_lr_ratio': must be in [0, 1]");
  EXPECT_EQ(Reject("schedule { decay_fraction: 2 }"),
            "field 'schedule.decay_fraction': must be in [0, 1] (0 = 0.2)");
  EXPECT_EQ(Reject("budget { max_flops: inf }"),
            "field 'budget': limits must be finite and >= 0");
  EXPECT_EQ(Reject("eval { temperature: nan }"),
            "field 'eval.temperature': must be a finite number in [0, 1000]");
  EXPECT_EQ(Reject("eval { top_p: nan }"),
            "field 'eval.top_p': must be in [0, 1]");
  EXPECT_EQ(Reject("init { upcycle_noise: -1 }"),
            "field 'init.upcycle_noise': must be a finite number in [0, 1000]");
  EXPECT_EQ(Reject("runtime { threads: 5000 }"),
            "field 'runtime.threads': must be in [0, 1024] (0 = --threads)");
  EXPECT_EQ(Reject("data { batch_size: 0 }"),
            "field 'data.batch_size': must be in [1, 1048576]");
}

TEST_F(ConstraintTest, EmptyFilesAndDirectoriesAreNotConfigs) {
  for (const std::string& text : {std::string(), std::string("# note\n")}) {
    const std::string path = Write("empty.textproto", text);
    absl::StatusOr<ExperimentConfig> config = LoadExperimentConfig({path});
    ASSERT_FALSE(config.ok());
    EXPECT_EQ(config.status().message(),
              path + ": empty config (it sets no field)");
  }
  absl::StatusOr<ExperimentConfig> config = LoadExperimentConfig({dir_});
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().message(),
            dir_ + ": is a directory, not a config file");
  EXPECT_EQ(ErrorOf(""), "cfg.textproto: empty config (it sets no field)");
}

}  // namespace
}  // namespace sparse_layers::config
