#include "analysis/attention/lorsa_evaluation.h"

#include <torch/torch.h>

#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/common/file_io.h"
#include "datasets/text/test_bpe.h"
#include "gtest/gtest.h"

namespace sparse_layers::analysis {
namespace {

// BOS, then the same span twice, every piece word-initial.
TEST(ProbeTokensTest, SpanRepeatsAfterBosFromWordInitialPieces) {
  auto tok = datasets::LoadTestBpe();
  auto probe = ProbeTokens(*tok, 5, 7, "");
  ASSERT_TRUE(probe.ok()) << probe.status();
  ASSERT_EQ(probe->sizes(), torch::IntArrayRef({7, 11}));
  EXPECT_TRUE(torch::all(probe->select(1, 0) == tok->eos_id()).item<bool>());
  EXPECT_TRUE(torch::equal(probe->slice(1, 1, 6), probe->slice(1, 6, 11)));
  EXPECT_FALSE(torch::equal(probe->select(0, 0), probe->select(0, 1)));
  for (int64_t id :
       std::vector<int64_t>(probe->data_ptr<int64_t>(),
                            probe->data_ptr<int64_t>() + probe->numel())) {
    if (id == tok->eos_id()) continue;
    EXPECT_FALSE(tok->WordOfPiece(static_cast<int>(id)).empty()) << id;
  }
  // The same draw again: the probe is a function of its arguments.
  EXPECT_TRUE(torch::equal(*ProbeTokens(*tok, 5, 7, ""), *probe));
}

// With a word list the span is drawn from those words only, and a word that
// is not one piece is refused.
TEST(ProbeTokensTest, WordListRestrictsThePiecesAndMustBeSinglePieces) {
  auto tok = datasets::LoadTestBpe();
  std::set<int64_t> allowed;
  std::string words;
  for (int id = 0; id < tok->vocab_size() && allowed.size() < 3; ++id) {
    const std::string word = tok->WordOfPiece(id);
    if (word.empty() || tok->EncodeWord(word).size() != 1) continue;
    allowed.insert(tok->EncodeWord(word)[0]);
    absl::StrAppend(&words, word, "\n");
  }
  ASSERT_EQ(allowed.size(), 3u);
  const std::string path =
      std::string(std::getenv("TEST_TMPDIR")) + "/words.txt";
  ASSERT_TRUE(WriteFileAtomically(path, words).ok());
  auto probe = ProbeTokens(*tok, 4, 16, path);
  ASSERT_TRUE(probe.ok()) << probe.status();
  std::set<int64_t> seen;
  for (int64_t id :
       std::vector<int64_t>(probe->data_ptr<int64_t>(),
                            probe->data_ptr<int64_t>() + probe->numel())) {
    if (id != tok->eos_id()) seen.insert(id);
  }
  EXPECT_EQ(seen, allowed);

  ASSERT_TRUE(WriteFileAtomically(path, words + "zqxjkvwpq\n").ok());
  const auto refused = ProbeTokens(*tok, 4, 16, path);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("'zqxjkvwpq' is not one piece"),
            std::string::npos)
      << refused.status();
}

TEST(MostFrequentKeyTest, MostValuesWinAndTiesGoToTheSmallestKey) {
  EXPECT_EQ(MostFrequentKey({}), -1);
  EXPECT_EQ(MostFrequentKey({{3, {1, 2}}, {1, {5}}, {2, {4, 8, 16}}}), 2);
  EXPECT_EQ(MostFrequentKey({{4, {1, 2}}, {1, {5, 6}}}), 1);
}

}  // namespace
}  // namespace sparse_layers::analysis
