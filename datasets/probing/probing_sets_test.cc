#include "datasets/probing/probing_sets.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/common/digest.h"
#include "gtest/gtest.h"

namespace sparse_layers::datasets {
namespace {

Document MakeDocument(const std::string& source, const std::string& id,
                      const std::string& label, const std::string& text) {
  Document document;
  document.set_source(source);
  document.set_id(id);
  document.set_label(label);
  document.set_text(text);
  return document;
}

// `words` distinct four-letter words: a text of many 20-character passages.
std::string Words(int words) {
  std::string text;
  for (int i = 0; i < words; ++i) {
    absl::StrAppend(&text, std::string(1, 'a' + i % 26),
                    std::string(3, 'a' + i / 26 % 26), " ");
  }
  return text;
}

std::vector<std::string> Lines(const std::string& jsonl) {
  return absl::StrSplit(jsonl, '\n', absl::SkipEmpty());
}

TEST(PassagesTest, CutsAtWhitespaceAndDropsAShortTail) {
  EXPECT_EQ(Passages("one two three four five six", 10, 8),
            (std::vector<std::string>{"one two", "three four", "five six"}));
  EXPECT_EQ(Passages("  one two three four five six", 10, 2),
            (std::vector<std::string>{"one two", "three four"}));
  // "k" is shorter than a quarter of 10 characters.
  EXPECT_EQ(Passages("abcdefghij k", 10, 8),
            (std::vector<std::string>{"abcdefghij"}));
  EXPECT_TRUE(Passages(" \n\t", 10, 8).empty());
}

TEST(ProbingLabelsTest, EachSourceGoesToItsTasks) {
  // Each era's first and last year, and a year that is not a number.
  const std::map<std::string, std::string> eras = {
      {"1790", "1790-1859"}, {"1859", "1790-1859"},
      {"1860", "1860-1909"}, {"1909", "1860-1909"},
      {"1910", "1910-1959"}, {"1959", "1910-1959"},
      {"1960", "1960-"},     {"n/a", ""}};
  for (const auto& [year, era] : eras) EXPECT_EQ(SotuEra(year), era) << year;

  using Labels = std::map<std::string, std::string>;
  EXPECT_EQ(ProbingLabels(MakeDocument("brown", "ca01", "news", "x")),
            (Labels{{"brown_genre", "news"}, {"source", "brown"}}));
  EXPECT_EQ(ProbingLabels(MakeDocument("spam_assassin", "1", "spam", "x")),
            (Labels{{"spam_ham", "spam"}, {"source", "spam_assassin"}}));
  Document whig = MakeDocument("sotu", "1841_tyler", "Whig", "x");
  (*whig.mutable_metadata())["year"] = "1841";
  EXPECT_EQ(ProbingLabels(whig),  // No party task for a Whig.
            (Labels{{"sotu_era", "1790-1859"}, {"source", "sotu"}}));
  Document democrat = MakeDocument("sotu", "1962_kennedy", "Democratic", "x");
  (*democrat.mutable_metadata())["year"] = "1962";
  EXPECT_EQ(ProbingLabels(democrat), (Labels{{"sotu_party", "Democratic"},
                                             {"sotu_era", "1960-"},
                                             {"source", "sotu"}}));
  EXPECT_EQ(ProbingLabels(MakeDocument("moby_dick", "1", "", "x")),
            (Labels{{"source", "moby_dick"}}));
  EXPECT_TRUE(ProbingLabels(MakeDocument("synthetic", "1", "x", "x")).empty());
}

// Three Brown documents of 10 passages give 4 each (12), of which a class
// keeps the 5 with the smallest keys, written in key order; an e-mail gives
// one passage however long it is.
TEST(CapProbingSetsTest, KeepsTheSmallestKeysOfEachClass) {
  ProbingSetOptions options;
  options.passage_chars = 20;
  options.max_passages_per_document = 4;
  options.max_per_class = 5;
  ProbingPassages tasks;
  for (const char* id : {"ca01", "ca02", "cb01"}) {
    AddDocumentPassages(MakeDocument("brown", id, "news", Words(50)), options,
                        tasks);
  }
  AddDocumentPassages(MakeDocument("spam_assassin", "7", "ham", Words(50)),
                      options, tasks);
  ASSERT_EQ(tasks["brown_genre"]["news"].size(), 12u);
  ASSERT_EQ(tasks["spam_ham"]["ham"].size(), 1u);

  std::vector<std::pair<std::string, std::string>> expected;  // key, id
  for (const char* id : {"ca01", "ca02", "cb01"}) {
    for (int i = 0; i < 4; ++i) {
      const std::string group = absl::StrCat("brown/", id);
      expected.emplace_back(
          Sha256Hex(absl::StrCat("brown_genre\n", group, "\n", i)),
          absl::StrCat(group, "#", i));
    }
  }
  std::sort(expected.begin(), expected.end());

  const ProbingSets sets = CapProbingSets(std::move(tasks), options);
  EXPECT_EQ(sets.classes,
            "brown_genre\tnews\t5\nsource\tbrown\t5\nsource\tspam_assassin\t1\n"
            "spam_ham\tham\t1\n");
  const std::vector<std::string> lines = Lines(sets.jsonl.at("brown_genre"));
  ASSERT_EQ(lines.size(), 5u);
  for (int i = 0; i < 5; ++i) {
    EXPECT_TRUE(absl::StrContains(
        lines[i], absl::StrCat("\"id\":\"", expected[i].second, "\"")))
        << i << ": " << lines[i];
    EXPECT_TRUE(absl::StrContains(lines[i], "\"label\":\"news\"")) << i;
  }
  EXPECT_EQ(Lines(sets.jsonl.at("source")).size(), 6u);
  EXPECT_EQ(sets.jsonl.count("sotu_era"), 0u);
}

void WriteFile(const std::string& path, const std::string& contents) {
  std::ofstream(path) << contents;
}

// From files: a corpus JSONL and a one-file Brown with tags; brown_pos
// windows are probed at their last token, capped per part of speech.
TEST(BuildProbingSetsTest, ReadsTheCorpusAndBrownTags) {
  const std::string dir = std::getenv("TEST_TMPDIR");
  WriteFile(dir + "/cats.txt", "ca01 news\n");
  WriteFile(dir + "/ca01",
            "\n\n\tThe/at jury/nn said/vbd ./.\n\n"
            "\tIt/pps ran/vbd fast/rb and/cc the/at dog/nn ran/vbd ./.\n");
  WriteFile(dir + "/corpus.jsonl",
            "{\"id\":\"ca01\",\"source\":\"brown\",\"label\":\"news\","
            "\"text\":\"The jury said.\"}\n"
            "{\"id\":\"1\",\"source\":\"moby_dick\",\"text\":\"Call me "
            "Ishmael.\"}\n");
  ProbingSetOptions options;
  options.corpus = {dir + "/corpus.jsonl"};
  options.brown_cats = dir + "/cats.txt";
  options.passage_chars = 40;  // A quarter of it: 10 characters or more.
  options.max_per_pos_class = 2;
  options.pos_context_words = 2;
  auto sets = BuildProbingSets(options);
  ASSERT_TRUE(sets.ok()) << sets.status();
  EXPECT_EQ(sets->classes,
            "brown_genre\tnews\t1\n"
            "brown_pos\tadverb\t1\nbrown_pos\tdeterminer\t2\n"
            "brown_pos\tnoun\t2\nbrown_pos\tpronoun\t1\nbrown_pos\tverb\t2\n"
            "source\tbrown\t1\nsource\tmoby_dick\t1\n");
  const std::vector<std::string> pos = Lines(sets->jsonl.at("brown_pos"));
  ASSERT_EQ(pos.size(), 8u);
  for (const std::string& line : pos) {
    EXPECT_TRUE(absl::StrContains(line, "\"pool\":\"last\"")) << line;
    EXPECT_TRUE(absl::StrContains(line, "\"group\":\"brown/ca01\"")) << line;
  }
  EXPECT_TRUE(absl::StrContains(sets->jsonl.at("source"), "Call me Ishmael."));

  options.corpus = {dir + "/missing.jsonl"};
  EXPECT_FALSE(BuildProbingSets(options).ok());
}

}  // namespace
}  // namespace sparse_layers::datasets
