#include "layers/models/hf_checkpoint.h"

#include <torch/torch.h>

#include <filesystem>
#include <map>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "layers/models/safetensors.h"
#include "tools/common/file_io.h"

namespace sparse_layers::layers {
namespace {

using ::testing::HasSubstr;

constexpr char kGpt2Config[] = R"({"model_type": "gpt2", "vocab_size": 11,
  "n_positions": 8, "n_embd": 8, "n_layer": 2, "n_head": 2, "n_inner": null,
  "activation_function": "gelu_new", "layer_norm_epsilon": 1e-05})";

// A tiny GPT-2 checkpoint's tensors, as transformers' GPT2LMHeadModel names
// them (Conv1D weights [in, out]).
std::map<std::string, torch::Tensor> Gpt2Tensors() {
  torch::manual_seed(0);
  std::map<std::string, torch::Tensor> t = {
      {"transformer.wte.weight", torch::randn({11, 8})},
      {"transformer.wpe.weight", torch::randn({8, 8})},
      {"transformer.ln_f.weight", torch::randn({8})},
      {"transformer.ln_f.bias", torch::randn({8})}};
  for (int i = 0; i < 2; ++i) {
    const std::string h = absl::StrCat("transformer.h.", i, ".");
    for (const char* norm : {"ln_1", "ln_2"}) {
      t[h + norm + ".weight"] = torch::randn({8});
      t[h + norm + ".bias"] = torch::randn({8});
    }
    for (const auto& [name, in, out] :
         {std::tuple<const char*, int, int>{"attn.c_attn", 8, 24},
          {"attn.c_proj", 8, 8},
          {"mlp.c_fc", 8, 32},
          {"mlp.c_proj", 32, 8}}) {
      t[h + name + ".weight"] = torch::randn({in, out});
      t[h + name + ".bias"] = torch::randn({out});
    }
  }
  return t;
}

class HfCheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = absl::StrCat(
        ::testing::TempDir(), "/hf_",
        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }

  void Write(const std::string& config,
             const std::map<std::string, torch::Tensor>& tensors) {
    ASSERT_TRUE(WriteFileAtomically(dir_ + "/config.json", config).ok());
    ASSERT_TRUE(WriteSafetensors(dir_ + "/model.safetensors", tensors).ok());
  }

  // The load's error: one line, starting with the file it is about.
  std::string Error(const std::string& file) {
    absl::StatusOr<HuggingFaceModel> loaded = LoadHuggingFaceModel(dir_);
    EXPECT_FALSE(loaded.ok());
    if (loaded.ok()) return "";
    const std::string message(loaded.status().message());
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    EXPECT_EQ(message.rfind(dir_ + "/" + file + ": ", 0), 0u) << message;
    return message.substr(dir_.size() + file.size() + 3);
  }

  std::string dir_;
};

TEST_F(HfCheckpointTest, LoadsGpt2AsOptionsOfTheGpt) {
  Write(kGpt2Config, Gpt2Tensors());
  absl::StatusOr<HuggingFaceModel> loaded = LoadHuggingFaceModel(dir_);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->model_type, "gpt2");
  const GptOptions& o = loaded->model->options();
  EXPECT_TRUE(o.bias && o.gelu_tanh && o.tie_embeddings);
  EXPECT_FALSE(o.rotary || o.rms_norm || o.parallel_residual);
  EXPECT_EQ(o.d_ffn, 32);
  // Conv1D [in, out] became Linear [out, in].
  EXPECT_TRUE(torch::equal(
      loaded->model->blocks[1]->ffn->named_parameters()["in.weight"],
      Gpt2Tensors()["transformer.h.1.mlp.c_fc.weight"].t()));
  EXPECT_FALSE(loaded->model->is_training());
}

TEST_F(HfCheckpointTest, CapsTheContextLength) {
  Write(kGpt2Config, Gpt2Tensors());
  absl::StatusOr<HuggingFaceModel> loaded = LoadHuggingFaceModel(dir_, 5);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->model->options().context_length, 5);
  EXPECT_TRUE(
      torch::equal(loaded->model->position_embedding->weight,
                   Gpt2Tensors()["transformer.wpe.weight"].slice(0, 0, 5)));
}

TEST_F(HfCheckpointTest, ReadsShardsThroughTheIndex) {
  Write(kGpt2Config, Gpt2Tensors());
  absl::StatusOr<HuggingFaceModel> single = LoadHuggingFaceModel(dir_);
  ASSERT_TRUE(single.ok()) << single.status();
  std::filesystem::remove(dir_ + "/model.safetensors");
  // Blocks in one shard, the rest in the other, as transformers splits them.
  std::map<std::string, torch::Tensor> shards[2];
  std::string map;
  for (const auto& [name, tensor] : Gpt2Tensors()) {
    const int shard = absl::StrContains(name, ".h.") ? 0 : 1;
    shards[shard][name] = tensor;
    absl::StrAppend(&map, map.empty() ? "" : ",", "\"", name, "\": \"s", shard,
                    ".safetensors\"");
  }
  ASSERT_TRUE(WriteSafetensors(dir_ + "/s0.safetensors", shards[0]).ok());
  ASSERT_TRUE(WriteSafetensors(dir_ + "/s1.safetensors", shards[1]).ok());
  const std::string index = dir_ + "/model.safetensors.index.json";
  ASSERT_TRUE(WriteFileAtomically(
                  index, absl::StrCat("{\"metadata\": {}, \"weight_map\": {",
                                      map, "}}"))
                  .ok());
  absl::StatusOr<HuggingFaceModel> sharded = LoadHuggingFaceModel(dir_);
  ASSERT_TRUE(sharded.ok()) << sharded.status();
  torch::NoGradGuard no_grad;
  const torch::Tensor tokens = torch::tensor({{1, 4, 2, 9}}, torch::kLong);
  EXPECT_TRUE(torch::equal(sharded->model->forward(tokens),
                           single->model->forward(tokens)));

  // An index entry whose shard lacks the tensor: one line naming the index.
  ASSERT_TRUE(WriteFileAtomically(
                  index, absl::StrCat("{\"weight_map\": {\"transformer.wte."
                                      "weight\": \"s0.safetensors\"}}"))
                  .ok());
  EXPECT_EQ(Error("model.safetensors.index.json"),
            "weight_map puts 'transformer.wte.weight' in s0.safetensors, which "
            "lacks it");
}

TEST_F(HfCheckpointTest, UnsupportedModelType) {
  Write(R"({"model_type": "bert", "vocab_size": 11})", Gpt2Tensors());
  EXPECT_EQ(Error("config.json"),
            "model_type 'bert' is not supported (supported: gpt2, gpt_neox, "
            "llama)");
}

TEST_F(HfCheckpointTest, BadConfigFields) {
  Write(absl::StrReplaceAll(kGpt2Config, {{"\"n_embd\": 8,", ""}}),
        Gpt2Tensors());
  EXPECT_EQ(Error("config.json"), "field 'n_embd' missing");
  Write(absl::StrReplaceAll(kGpt2Config,
                            {{"\"n_head\": 2", "\"n_head\": \"two\""}}),
        Gpt2Tensors());
  EXPECT_EQ(Error("config.json"),
            "field 'n_head' must be a positive integer, got \"two\"");
  Write(absl::StrReplaceAll(kGpt2Config, {{"\"n_head\": 2", "\"n_head\": 3"}}),
        Gpt2Tensors());
  EXPECT_EQ(Error("config.json"),
            "field 'n_embd' 8 is not a multiple of n_head 3");
  Write(absl::StrReplaceAll(kGpt2Config, {{"gelu_new", "swish"}}),
        Gpt2Tensors());
  EXPECT_EQ(Error("config.json"),
            "field 'activation_function' 'swish' is not supported (gelu, "
            "gelu_new, gelu_pytorch_tanh)");
  Write("{\"model_type\": \"gpt2\",", Gpt2Tensors());
  EXPECT_THAT(Error("config.json"), HasSubstr("not valid JSON"));
  Write(R"({"model_type": "llama", "vocab_size": 11, "hidden_size": 8,
    "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 8,
    "max_position_embeddings": 8,
    "rope_scaling": {"rope_type": "yarn", "factor": 4.0}})",
        {});
  EXPECT_EQ(Error("config.json"),
            "field 'rope_scaling.rope_type' 'yarn' is not supported (llama3, "
            "default)");
}

TEST_F(HfCheckpointTest, MissingTensor) {
  std::map<std::string, torch::Tensor> tensors = Gpt2Tensors();
  tensors.erase("transformer.h.1.mlp.c_fc.bias");
  Write(kGpt2Config, tensors);
  EXPECT_EQ(Error("model.safetensors"),
            "tensor 'transformer.h.1.mlp.c_fc.bias' missing");
}

TEST_F(HfCheckpointTest, WrongShape) {
  std::map<std::string, torch::Tensor> tensors = Gpt2Tensors();
  // Stored as a Linear ([out, in]) instead of GPT-2's Conv1D ([in, out]).
  tensors["transformer.h.0.attn.c_attn.weight"] = torch::zeros({24, 8});
  Write(kGpt2Config, tensors);
  EXPECT_EQ(Error("model.safetensors"),
            "tensor 'transformer.h.0.attn.c_attn.weight' has shape [24, 8], "
            "expected [8, 24]");
}

TEST_F(HfCheckpointTest, UnexpectedTensor) {
  std::map<std::string, torch::Tensor> tensors = Gpt2Tensors();
  tensors["transformer.h.0.attn.rotary.weight"] = torch::zeros({2});
  // Attention-mask buffers that old files carry are not parameters: ignored.
  tensors["transformer.h.0.attn.bias"] = torch::zeros({1, 1, 8, 8});
  Write(kGpt2Config, tensors);
  EXPECT_EQ(Error("model.safetensors"),
            "unexpected tensor 'transformer.h.0.attn.rotary.weight' for "
            "model_type gpt2");
}

TEST_F(HfCheckpointTest, UnsupportedDtype) {
  Write(kGpt2Config, Gpt2Tensors());
  absl::StatusOr<std::string> bytes = SerializeSafetensors(Gpt2Tensors());
  ASSERT_TRUE(bytes.ok());
  // I32 has F32's size, so only the dtype changes.
  const std::string edited = absl::StrReplaceAll(
      *bytes, {{"\"transformer.ln_f.bias\":{\"dtype\":\"F32\"",
                "\"transformer.ln_f.bias\":{\"dtype\":\"I32\""}});
  ASSERT_NE(edited, *bytes);
  ASSERT_TRUE(WriteFileAtomically(dir_ + "/model.safetensors", edited).ok());
  EXPECT_EQ(Error("model.safetensors"),
            "unsupported dtype 'I32' for tensor 'transformer.ln_f.bias' (F32, "
            "F16 and BF16 read as float32)");
}

TEST_F(HfCheckpointTest, TruncatedHeader) {
  Write(kGpt2Config, Gpt2Tensors());
  absl::StatusOr<std::string> bytes = SerializeSafetensors(Gpt2Tensors());
  ASSERT_TRUE(bytes.ok());
  ASSERT_TRUE(
      WriteFileAtomically(dir_ + "/model.safetensors", bytes->substr(0, 100))
          .ok());
  EXPECT_THAT(Error("model.safetensors"), HasSubstr("truncated: header says "));
}

}  // namespace
}  // namespace sparse_layers::layers
