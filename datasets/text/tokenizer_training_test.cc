#include "datasets/text/tokenizer_training.h"

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/common/digest.h"
#include "base/common/file_io.h"
#include "base/common/staged_outputs.h"
#include "datasets/text/corpus.pb.h"
#include "datasets/text/tokenizer.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"

namespace sparse_layers::datasets {
namespace {

std::vector<std::string> Lines(absl::string_view text, size_t max_bytes) {
  std::vector<std::string> lines;
  AppendSentenceLines(text, lines, max_bytes);
  return lines;
}

TEST(AppendSentenceLinesTest, StripsLinesAndDropsEmptyOnes) {
  EXPECT_EQ(Lines("  one \n\n\t\ntwo three\r\n", 4000),
            (std::vector<std::string>{"one", "two three"}));
}

TEST(AppendSentenceLinesTest, CutsALongLineAtItsLastSpace) {
  // The space at byte 9 is the last one within the first 10 bytes.
  EXPECT_EQ(Lines("aaaa bbbb cccc dd", 10),
            (std::vector<std::string>{"aaaa bbbb", "cccc dd"}));
  // No space: cut at max_bytes.
  EXPECT_EQ(Lines("abcdefghijkl", 5),
            (std::vector<std::string>{"abcde", "fghij", "kl"}));
}

TEST(AppendSentenceLinesTest, NeverCutsInsideAUtf8Sequence) {
  // At the default limit: byte 4000 is the second byte of "é" (C3 A9), so the
  // cut moves back to byte 3999 and "é" starts the next line.
  const std::string line =
      std::string(3999, 'x') + "\xC3\xA9" + std::string(10, 'y');
  std::vector<std::string> lines;
  AppendSentenceLines(line, lines);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], std::string(3999, 'x'));
  EXPECT_EQ(lines[1], "\xC3\xA9" + std::string(10, 'y'));
  // A three-byte "€" (E2 82 AC) straddling the limit moves back two bytes.
  EXPECT_EQ(Lines("abcd\xE2\x82\xAC", 6),
            (std::vector<std::string>{"abcd", "\xE2\x82\xAC"}));
}

TEST(StrideSentenceLinesTest, KeepsLineITimesTotalOverLimit) {
  std::vector<std::string> lines;
  for (int i = 0; i < 10; ++i) lines.push_back(absl::StrCat("line ", i));
  std::vector<std::string> all = lines;
  EXPECT_EQ(StrideSentenceLines(all, 0), "all lines");
  EXPECT_EQ(all.size(), 10u);
  EXPECT_EQ(StrideSentenceLines(all, 10), "all lines");
  EXPECT_EQ(all.size(), 10u);
  // i * 10 / 4 for i < 4: lines 0, 2, 5 and 7.
  EXPECT_EQ(StrideSentenceLines(lines, 4), "line i*10/4 for i < 4");
  EXPECT_EQ(lines,
            (std::vector<std::string>{"line 0", "line 2", "line 5", "line 7"}));
}

TEST(SentencePieceTrainerArgumentsTest, KeepsDecodeEncodeExact) {
  const std::string arguments =
      SentencePieceTrainerArguments("s.txt", "out.tmp", 512);
  EXPECT_EQ(arguments,
            "--input=s.txt --model_prefix=out.tmp --model_type=bpe "
            "--vocab_size=512 --byte_fallback=true --character_coverage=0.9995 "
            "--normalization_rule_name=identity "
            "--remove_extra_whitespaces=false --split_digits=true "
            "--allow_whitespace_only_pieces=true --input_sentence_size=0 "
            "--shuffle_input_sentence=false --num_threads=1 --minloglevel=1 "
            "--unk_id=0 --bos_id=1 --eos_id=2 --pad_id=-1");
}

TEST(TrainTokenizerTest, WritesModelVocabularyAndManifest) {
  const std::string dir = std::getenv("TEST_TMPDIR");
  const std::string input = dir + "/train.jsonl";
  std::string jsonl;
  for (int i = 0; i < 60; ++i) {
    absl::StrAppend(&jsonl, R"({"text":"the quick brown fox )", i,
                    R"( jumps\nover the lazy dog"})", "\n");
  }
  ASSERT_TRUE(WriteFileAtomically(input, jsonl).ok());
  TokenizerTrainingOptions options;
  options.input = input;
  options.out_prefix = dir + "/bpe";
  options.vocab_size = 300;
  options.max_sentences = 50;
  {
    StagedOutputs outputs;
    absl::Status trained = TrainTokenizer(options, outputs);
    ASSERT_TRUE(trained.ok()) << trained;
    ASSERT_TRUE(outputs.Commit().ok());
  }
  auto text = ReadFileToString(dir + "/bpe.manifest.textproto");
  ASSERT_TRUE(text.ok()) << text.status();
  TokenizerManifest manifest;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(*text, &manifest));
  EXPECT_EQ(manifest.model_type(), "bpe");
  EXPECT_EQ(manifest.vocab_size(), 300);
  EXPECT_TRUE(manifest.byte_fallback());
  // 120 lines (two per document) strided to 50.
  EXPECT_EQ(manifest.sentences(), 50);
  EXPECT_EQ(manifest.sentence_rule(), "line i*120/50 for i < 50");
  EXPECT_EQ(manifest.source_sha256(), Sha256Hex(jsonl));
  EXPECT_EQ(manifest.sha256(), *Sha256OfFile(dir + "/bpe.model"));
  EXPECT_EQ(manifest.unk_id(), 0);
  EXPECT_EQ(manifest.bos_id(), 1);
  EXPECT_EQ(manifest.eos_id(), 2);
  // The temporary files are gone.
  for (const char* name :
       {"/bpe.sentences.tmp", "/bpe.tmp.model", "/bpe.tmp.vocab"}) {
    EXPECT_FALSE(std::filesystem::exists(dir + name)) << name;
  }
  std::string error;
  std::unique_ptr<Tokenizer> tokenizer =
      Tokenizer::Load(dir + "/bpe.model", &error);
  ASSERT_NE(tokenizer, nullptr) << error;
  EXPECT_EQ(tokenizer->vocab_size(), 300);
  EXPECT_EQ(tokenizer->eos_id(), 2);
  const std::string sample = "the  lazy\tfox ünïcode 42";
  EXPECT_EQ(tokenizer->Decode(tokenizer->Encode(sample)), sample);
}

TEST(TrainTokenizerTest, RejectsAMalformedRecord) {
  const std::string dir = std::getenv("TEST_TMPDIR");
  ASSERT_TRUE(
      WriteFileAtomically(dir + "/bad.jsonl", "{\"label\":\"x\"}\n").ok());
  TokenizerTrainingOptions options;
  options.input = dir + "/bad.jsonl";
  options.out_prefix = dir + "/bad";
  StagedOutputs outputs;
  EXPECT_FALSE(TrainTokenizer(options, outputs).ok());
}

}  // namespace
}  // namespace sparse_layers::datasets
