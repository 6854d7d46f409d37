#include "models/checkpoints/hf_checkpoint.h"

#include <torch/torch.h>

#include <filesystem>
#include <map>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "base/common/file_io.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "models/checkpoints/hf_test_checkpoint.h"
#include "models/checkpoints/safetensors.h"

namespace sparse_layers::layers {
namespace {

using ::testing::HasSubstr;

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
    ASSERT_TRUE(WriteHuggingFaceCheckpoint(dir_, config, tensors).ok());
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
  Write(kTinyGpt2Config, TinyGpt2Tensors());
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
      TinyGpt2Tensors()["transformer.h.1.mlp.c_fc.weight"].t()));
  EXPECT_FALSE(loaded->model->is_training());
}

TEST_F(HfCheckpointTest, CapsTheContextLength) {
  Write(kTinyGpt2Config, TinyGpt2Tensors());
  absl::StatusOr<HuggingFaceModel> loaded = LoadHuggingFaceModel(dir_, 5);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->model->options().context_length, 5);
  EXPECT_TRUE(
      torch::equal(loaded->model->position_embedding->weight,
                   TinyGpt2Tensors()["transformer.wpe.weight"].slice(0, 0, 5)));
}

TEST_F(HfCheckpointTest, ReadsShardsThroughTheIndex) {
  Write(kTinyGpt2Config, TinyGpt2Tensors());
  absl::StatusOr<HuggingFaceModel> single = LoadHuggingFaceModel(dir_);
  ASSERT_TRUE(single.ok()) << single.status();
  std::filesystem::remove(dir_ + "/model.safetensors");
  // Blocks in one shard, the rest in the other, as transformers splits them.
  std::map<std::string, torch::Tensor> shards[2];
  std::string map;
  for (const auto& [name, tensor] : TinyGpt2Tensors()) {
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
  Write(R"({"model_type": "bert", "vocab_size": 11})", TinyGpt2Tensors());
  EXPECT_EQ(Error("config.json"),
            "model_type 'bert' is not supported (supported: gpt2, gpt_neox, "
            "llama)");
}

TEST_F(HfCheckpointTest, BadConfigFields) {
  Write(absl::StrReplaceAll(kTinyGpt2Config, {{"\"n_embd\": 8,", ""}}),
        TinyGpt2Tensors());
  EXPECT_EQ(Error("config.json"), "field 'n_embd' missing");
  Write(absl::StrReplaceAll(kTinyGpt2Config,
                            {{"\"n_head\": 2", "\"n_head\": \"two\""}}),
        TinyGpt2Tensors());
  EXPECT_EQ(Error("config.json"),
            "field 'n_head' must be a positive integer, got \"two\"");
  Write(absl::StrReplaceAll(kTinyGpt2Config,
                            {{"\"n_head\": 2", "\"n_head\": 3"}}),
        TinyGpt2Tensors());
  EXPECT_EQ(Error("config.json"),
            "field 'n_embd' 8 is not a multiple of n_head 3");
  Write(absl::StrReplaceAll(kTinyGpt2Config, {{"gelu_new", "swish"}}),
        TinyGpt2Tensors());
  EXPECT_EQ(Error("config.json"),
            "field 'activation_function' 'swish' is not supported (gelu, "
            "gelu_new, gelu_pytorch_tanh)");
  Write("{\"model_type\": \"gpt2\",", TinyGpt2Tensors());
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
  std::map<std::string, torch::Tensor> tensors = TinyGpt2Tensors();
  tensors.erase("transformer.h.1.mlp.c_fc.bias");
  Write(kTinyGpt2Config, tensors);
  EXPECT_EQ(Error("model.safetensors"),
            "tensor 'transformer.h.1.mlp.c_fc.bias' missing");
}

TEST_F(HfCheckpointTest, WrongShape) {
  std::map<std::string, torch::Tensor> tensors = TinyGpt2Tensors();
  // Stored as a Linear ([out, in]) instead of GPT-2's Conv1D ([in, out]).
  tensors["transformer.h.0.attn.c_attn.weight"] = torch::zeros({24, 8});
  Write(kTinyGpt2Config, tensors);
  EXPECT_EQ(Error("model.safetensors"),
            "tensor 'transformer.h.0.attn.c_attn.weight' has shape [24, 8], "
            "expected [8, 24]");
}

TEST_F(HfCheckpointTest, UnexpectedTensor) {
  std::map<std::string, torch::Tensor> tensors = TinyGpt2Tensors();
  tensors["transformer.h.0.attn.rotary.weight"] = torch::zeros({2});
  // Attention-mask buffers that old files carry are not parameters: ignored.
  tensors["transformer.h.0.attn.bias"] = torch::zeros({1, 1, 8, 8});
  Write(kTinyGpt2Config, tensors);
  EXPECT_EQ(Error("model.safetensors"),
            "unexpected tensor 'transformer.h.0.attn.rotary.weight' for "
            "model_type gpt2");
}

TEST_F(HfCheckpointTest, UnsupportedDtype) {
  Write(kTinyGpt2Config, TinyGpt2Tensors());
  absl::StatusOr<std::string> bytes = SerializeSafetensors(TinyGpt2Tensors());
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
  Write(kTinyGpt2Config, TinyGpt2Tensors());
  absl::StatusOr<std::string> bytes = SerializeSafetensors(TinyGpt2Tensors());
  ASSERT_TRUE(bytes.ok());
  ASSERT_TRUE(
      WriteFileAtomically(dir_ + "/model.safetensors", bytes->substr(0, 100))
          .ok());
  EXPECT_THAT(Error("model.safetensors"), HasSubstr("truncated: header says "));
}

}  // namespace
}  // namespace sparse_layers::layers
