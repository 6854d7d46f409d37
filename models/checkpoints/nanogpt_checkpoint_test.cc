#include "models/checkpoints/nanogpt_checkpoint.h"

#include <gtest/gtest.h>
#include <torch/serialize.h>
#include <torch/torch.h>

#include <string>
#include <vector>

#include "base/common/file_io.h"
#include "models/checkpoints/hf_test_checkpoint.h"
#include "models/checkpoints/torch_pickle.h"

namespace sparse_layers::layers {
namespace {

using c10::IValue;
using Dict = c10::impl::GenericDict;

using tiny_nanogpt::Checkpoint;
using tiny_nanogpt::kContext;
using tiny_nanogpt::kVocab;
using tiny_nanogpt::kWidth;
using tiny_nanogpt::ModelArgs;
using tiny_nanogpt::NewDict;
using tiny_nanogpt::StateDict;

std::string Write(const std::string& name, const std::string& bytes) {
  const std::string path = std::string(getenv("TEST_TMPDIR")) + "/" + name;
  EXPECT_TRUE(WriteFileAtomically(path, bytes).ok());
  return path;
}

// torch::pickle_save writes torch.save's zip format.
std::string Save(const std::string& name, const Dict& checkpoint) {
  const std::vector<char> bytes = torch::pickle_save(IValue(checkpoint));
  return Write(name, std::string(bytes.begin(), bytes.end()));
}

TEST(NanoGptCheckpointTest, LoadsWithAndWithoutBiasAndPrefix) {
  for (const bool bias : {true, false}) {
    for (const std::string prefix : {"", "_orig_mod."}) {
      SCOPED_TRACE(std::string(bias ? "bias " : "no bias ") + prefix);
      const Dict state = StateDict(bias, prefix);
      absl::StatusOr<HuggingFaceModel> loaded = LoadNanoGptCheckpoint(
          Save("ok.pt", Checkpoint(state, ModelArgs(bias))));
      ASSERT_TRUE(loaded.ok()) << loaded.status();
      EXPECT_EQ(loaded->model_type, "nanogpt");
      const GptOptions& o = loaded->model->options();
      EXPECT_EQ(o.context_length, kContext);
      EXPECT_EQ(o.d_ffn, 4 * kWidth);
      EXPECT_FALSE(o.gelu_tanh);
      EXPECT_TRUE(o.tie_embeddings);
      auto params = loaded->model->named_parameters();
      // nn.Linear's [out, in] weights are copied as they are.
      EXPECT_TRUE(params["block0.attention.qkv.weight"].equal(
          state.at(IValue(prefix + "transformer.h.0.attn.c_attn.weight"))
              .toTensor()));
      EXPECT_EQ(params.contains("block0.attention_norm.bias"), bias);
      EXPECT_EQ(params.contains("block0.attention.qkv.bias"), bias);
      const torch::Tensor logits =
          loaded->model->forward(torch::tensor({{1, 2, 3}}));
      EXPECT_EQ(logits.sizes(), (std::vector<int64_t>{1, 3, kVocab}));
    }
  }
}

TEST(NanoGptCheckpointTest, ContextCappedAtMax) {
  absl::StatusOr<HuggingFaceModel> loaded = LoadNanoGptCheckpoint(
      Save("cap.pt", Checkpoint(StateDict(true), ModelArgs(true))), 2);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->model->options().context_length, 2);
}

// Each bad checkpoint fails with one line naming the file and the problem.
void ExpectError(const std::string& path, const std::string& part) {
  absl::StatusOr<HuggingFaceModel> loaded = LoadNanoGptCheckpoint(path);
  ASSERT_FALSE(loaded.ok());
  const std::string message(loaded.status().message());
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  EXPECT_EQ(message.rfind(path + ": ", 0), 0u) << message;
  EXPECT_NE(message.find(part), std::string::npos) << message;
}

TEST(NanoGptCheckpointTest, NotAZipOrTruncated) {
  ExpectError(Write("text.pt", "not a zip file\n"),
              "not a torch.save zip file");
  const std::vector<char> bytes =
      torch::pickle_save(IValue(Checkpoint(StateDict(true), ModelArgs(true))));
  ExpectError(
      Write("truncated.pt",
            std::string(bytes.begin(), bytes.begin() + bytes.size() / 2)),
      "not a torch.save zip file");
}

TEST(NanoGptCheckpointTest, MissingModelOrModelArgs) {
  Dict no_model = Checkpoint(StateDict(true), ModelArgs(true));
  no_model.erase(IValue("model"));
  ExpectError(Save("no_model.pt", no_model), "no 'model' dict");
  Dict no_args = Checkpoint(StateDict(true), ModelArgs(true));
  no_args.erase(IValue("model_args"));
  ExpectError(Save("no_args.pt", no_args), "no 'model_args' dict");
  Dict args = ModelArgs(true);
  args.erase(IValue("n_layer"));
  ExpectError(Save("no_layers.pt", Checkpoint(StateDict(true), args)),
              "model_args['n_layer'] missing");
  args = ModelArgs(true);
  args.insert_or_assign(IValue("n_head"), IValue(int64_t{3}));
  ExpectError(Save("heads.pt", Checkpoint(StateDict(true), args)),
              "model_args['n_embd'] 8 is not a multiple of n_head 3");
}

TEST(NanoGptCheckpointTest, MissingTensor) {
  Dict state = StateDict(true);
  state.erase(IValue("transformer.h.0.attn.c_proj.weight"));
  ExpectError(Save("missing.pt", Checkpoint(state, ModelArgs(true))),
              "tensor 'transformer.h.0.attn.c_proj.weight' missing");
  // bias=True wants every bias.
  ExpectError(Save("no_bias.pt", Checkpoint(StateDict(false), ModelArgs(true))),
              "tensor 'transformer.h.0.ln_1.bias' missing");
}

TEST(NanoGptCheckpointTest, UnexpectedTensor) {
  // bias=False with biases in the file.
  ExpectError(Save("biases.pt", Checkpoint(StateDict(true), ModelArgs(false))),
              "unexpected tensor 'transformer.h.0.attn.c_attn.bias' for "
              "model_type nanogpt");
}

TEST(NanoGptCheckpointTest, WrongShape) {
  Dict state = StateDict(true);
  state.insert_or_assign(IValue("transformer.h.0.attn.c_attn.weight"),
                         IValue(torch::randn({kWidth, 3 * kWidth})));
  ExpectError(Save("shape.pt", Checkpoint(state, ModelArgs(true))),
              "tensor 'transformer.h.0.attn.c_attn.weight' has shape [8, 24], "
              "expected [24, 8]");
}

TEST(NanoGptCheckpointTest, UnsupportedDtype) {
  Dict state = StateDict(true);
  state.insert_or_assign(
      IValue("transformer.wpe.weight"),
      IValue(torch::zeros({kContext, kWidth}, torch::kLong)));
  ExpectError(Save("dtype.pt", Checkpoint(state, ModelArgs(true))),
              "unsupported dtype Long for tensor 'transformer.wpe.weight'");
}

TEST(NanoGptCheckpointTest, UntiedLmHead) {
  Dict state = StateDict(true);
  state.insert_or_assign(IValue("lm_head.weight"),
                         IValue(torch::randn({kVocab, kWidth})));
  ExpectError(Save("untied.pt", Checkpoint(state, ModelArgs(true))),
              "tensor 'lm_head.weight' differs from 'transformer.wte.weight'");
}

TEST(TorchPickleTest, ReadsWhatLibTorchWrites) {
  Dict checkpoint = Checkpoint(StateDict(true), ModelArgs(true));
  absl::StatusOr<IValue> read = ReadTorchSave(Save("read.pt", checkpoint));
  ASSERT_TRUE(read.ok()) << read.status();
  const Dict dict = read->toGenericDict();
  EXPECT_EQ(dict.at(IValue("iter_num")).toInt(), 600000);
  EXPECT_EQ(dict.at(IValue("model_args")).toGenericDict().at(IValue("bias")),
            IValue(true));
  const Dict state = dict.at(IValue("model")).toGenericDict();
  const torch::Tensor wte =
      state.at(IValue("transformer.wte.weight")).toTensor();
  EXPECT_TRUE(wte.equal(checkpoint.at(IValue("model"))
                            .toGenericDict()
                            .at(IValue("transformer.wte.weight"))
                            .toTensor()));
  // Tied tensors share their storage.
  EXPECT_EQ(state.at(IValue("lm_head.weight")).toTensor().data_ptr(),
            wte.data_ptr());
}

}  // namespace
}  // namespace sparse_layers::layers
