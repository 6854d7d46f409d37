#include "analysis/patching/factual_recall.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/common/file_io.h"
#include "datasets/text/test_bpe.h"
#include "gtest/gtest.h"
#include "models/tiny_gpt.h"

namespace sparse_layers::analysis {
namespace {

constexpr char kStates[] =
    "capital,state\nAustin,Texas\nDover,Delaware\nSalem,Oregon\nBoise,"
    "Idaho\nAlbany,New "
    "York\nDenver,Colorado\nHelena,Montana\nAtlanta,Georgia\n";
// More facts, so that length groups of three or more exist (a third fact for
// the disruption null).
constexpr char kMoreStates[] =
    "Boston,Massachusetts\nPhoenix,Arizona\nRaleigh,North "
    "Carolina\nRichmond,Virginia\nLansing,Michigan\nMadison,Wisconsin\n"
    "Nashville,Tennessee\nTopeka,Kansas\nLincoln,Nebraska\nJuneau,Alaska\n"
    "Honolulu,Hawaii\nSacramento,California\nColumbus,Ohio\nTrenton,New "
    "Jersey\nHartford,Connecticut\nAugusta,Maine\n";

TEST(WordClassTest, BrownTagsMapToCoarseClasses) {
  EXPECT_EQ(WordClass("np-tl"), "proper_noun");
  EXPECT_EQ(WordClass("nns"), "noun");
  EXPECT_EQ(WordClass("vbd"), "verb");
  EXPECT_EQ(WordClass("md"), "verb");
  EXPECT_EQ(WordClass("jj"), "adjective");
  EXPECT_EQ(WordClass("at"), "determiner");
  EXPECT_EQ(WordClass("in"), "preposition");
  EXPECT_EQ(WordClass("cd"), "number");
  EXPECT_EQ(WordClass("."), "punctuation");
  EXPECT_EQ(WordClass("uh"), "other");
}

// A word's most frequent class, kept from three sightings, only from c???
// files.
TEST(BrownLexiconTest, MajorityClassOfWordsSeenThreeTimes) {
  const std::string dir = std::string(std::getenv("TEST_TMPDIR")) + "/brown";
  std::filesystem::create_directories(dir);
  ASSERT_TRUE(WriteFileAtomically(dir + "/ca01",
                                  "The/at dog/nn runs/vbz ./.\n\tThe/at "
                                  "dog/vb the/at Dog/nn-tl dog/nn\n")
                  .ok());
  ASSERT_TRUE(
      WriteFileAtomically(dir + "/README", "runs/vbz runs/vbz runs/vbz").ok());
  auto lexicon = BrownLexicon(dir);
  ASSERT_TRUE(lexicon.ok()) << lexicon.status();
  EXPECT_EQ(lexicon->size(), 2u) << lexicon->begin()->first;
  EXPECT_EQ(lexicon->at("the"), "determiner");
  EXPECT_EQ(lexicon->at("dog"), "noun");  // 3 nouns against 1 verb.
  const auto missing = BrownLexicon(dir + "/missing");
  EXPECT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("missing"), std::string::npos)
      << missing.status();
}

TEST(ParseFactsTest, PromptsShareThePrefixAndAnswerTheFirstToken) {
  auto tok = datasets::LoadTestBpe();
  const std::vector<Fact> facts = *ParseFacts(
      "state,capital\nTexas,Austin\nDelaware,Dover\nOhio,"
      "Columbus\n\n",
      *tok, "f.csv");
  ASSERT_EQ(facts.size(), 3u);
  EXPECT_EQ(facts[0].subject, "Texas");
  EXPECT_EQ(facts[0].answer, "Austin");
  std::vector<int64_t> expected = {tok->eos_id()};
  for (int id : tok->Encode("The capital of Texas is")) expected.push_back(id);
  EXPECT_EQ(facts[0].prompt, expected);
  const std::vector<int> full = tok->Encode("The capital of Texas is Austin");
  EXPECT_EQ(facts[0].answer_id, full[expected.size() - 1]);
  // The prefix starts the prompts whose subject's first piece does not merge
  // with " of" (the others are left out of patching).
  const std::vector<int64_t> prefix = PromptPrefix(*tok);
  EXPECT_EQ(prefix[0], tok->eos_id());
  int sharing = 0;
  const std::vector<Fact> states = *ParseFacts(kStates, *tok, "f.csv");
  for (const Fact& fact : states) {
    sharing += std::equal(prefix.begin(), prefix.end(), fact.prompt.begin());
  }
  EXPECT_GE(sharing, 2);
}

TEST(ParseFactsTest, WrongHeadersRowsAndTooFewFactsAreNamed) {
  auto tok = datasets::LoadTestBpe();
  auto message = [&](absl::string_view csv) {
    return std::string(ParseFacts(csv, *tok, "f.csv").status().message());
  };
  EXPECT_EQ(message("Austin,Texas\nDover,Delaware\nSalem,Oregon\n"),
            "f.csv: header 'Austin,Texas' needs an answer column (answer or "
            "capital) and a subject column (subject or state)");
  EXPECT_EQ(message("capital,state\nAustin,Texas\nbad line\n"),
            "f.csv:3: 1 fields, the header has 2");
  EXPECT_EQ(message("capital,state\nAustin,\n"),
            "f.csv:2: empty answer or subject");
  EXPECT_EQ(message("capital,state\nAustin,Texas\nDover,Delaware\n"),
            "f.csv: 2 facts, fewer than 3");
  EXPECT_EQ(message(""), "f.csv: empty");
}

// On a random sgatlin model: one recall row per fact, and patching a
// position where every prompt holds the same token (the prefix) changes
// nothing (NIE 0, the clean logit difference, for the counterfactual and the
// third fact alike), while the final token's patch moves the logit difference,
// the third fact's by another amount.
TEST(AppendPatchingTest, PrefixPositionsHaveNoEffect) {
  auto tok = datasets::LoadTestBpe();
  config::ModelConfig config =
      layers::testing::TinyModelConfig(tok->vocab_size(), 16, 2);
  config.set_context_length(32);
  config.set_ffn("sgatlin");
  config.set_d_ffn(64);
  config.set_n_experts(2);
  config.set_top_k(4);
  config.set_d_key(8);
  config.set_positions(config::ModelConfig::ROTARY);
  torch::manual_seed(3);
  auto model = layers::GptImpl::Create(*layers::GptOptionsFromConfig(config));
  ASSERT_TRUE(model.ok()) << model.status();
  (*model)->eval();
  const std::vector<Fact> facts =
      *ParseFacts(absl::StrCat(kStates, kMoreStates), *tok, "f.csv");
  const std::vector<int64_t> prefix = PromptPrefix(*tok);
  FactRecallTables tables;
  ASSERT_TRUE(AppendPatching("sgatlin", 5, **model, PatchKind::kRouting, facts,
                             *tok, prefix, tables)
                  .ok());
  const std::vector<std::string> recall =
      absl::StrSplit(tables.recall, '\n', absl::SkipEmpty());
  EXPECT_EQ(recall.size(), facts.size() + 1);
  // The disruption null by cell (seed ... token), the first 7 columns.
  std::map<std::string, std::vector<std::string>> nulls;
  for (absl::string_view line :
       absl::StrSplit(tables.disruption_null, '\n', absl::SkipEmpty())) {
    const std::vector<std::string> f = absl::StrSplit(line, ',');
    ASSERT_EQ(f.size(), 10u) << line;
    nulls[absl::StrJoin(f.begin(), f.begin() + 7, ",")] = f;
  }
  int prefix_rows = 0, final_rows = 0;
  for (absl::string_view line :
       absl::StrSplit(tables.patching, '\n', absl::SkipEmpty())) {
    const std::vector<std::string> f = absl::StrSplit(line, ',');
    ASSERT_EQ(f.size(), 13u) << line;
    if (f[0] == "seed") continue;
    EXPECT_EQ(f[0], "5");
    const int position = std::stoi(f[5]);
    // A length group of 3 or more facts gives each pair a third fact.
    const auto null = nulls.find(absl::StrJoin(f.begin(), f.begin() + 7, ","));
    ASSERT_NE(null, nulls.end()) << line;
    const std::vector<std::string>& n = null->second;
    const int pairs = std::stoi(f[7]), third_fact_pairs = std::stoi(n[7]);
    EXPECT_GT(third_fact_pairs, 0) << line;
    EXPECT_LE(third_fact_pairs, pairs) << line;
    if (third_fact_pairs == pairs) {  // The same pairs: the same NIE.
      EXPECT_NEAR(std::stod(n[8]), std::stod(f[8]), 1e-4) << line;
    }
    if (position < static_cast<int>(prefix.size())) {
      ++prefix_rows;
      EXPECT_NEAR(std::stod(f[8]), 0.0, 1e-6) << line;  // mean_nie
      // The patched logit difference is the clean one.
      EXPECT_NEAR(std::stod(f[10]), std::stod(f[11]), 1e-6) << line;
      EXPECT_NEAR(std::stod(n[9]), 0.0, 1e-6) << line;  // third_fact_nie
    } else if (f[6] == "<final>" && f[4] == "all") {
      ++final_rows;
      EXPECT_NE(std::stod(f[8]), 0.0) << line;
      // A third fact's state is not the counterfactual's: another NIE.
      EXPECT_GT(std::abs(std::stod(n[9]) - std::stod(n[8])), 1e-3) << line;
    }
  }
  // Every prefix position at each of the blocks 0, 1 and all.
  EXPECT_EQ(prefix_rows, 3 * static_cast<int>(prefix.size()));
  EXPECT_EQ(final_rows, 1);
  // One contrast row per block and position label.
  const std::vector<std::string> contrasts =
      absl::StrSplit(tables.block_contrasts, '\n', absl::SkipEmpty());
  EXPECT_GT(contrasts.size(), 2 * prefix.size());
}

// Two facts of one subject and one of a much longer subject: the pair of
// equal length has no third fact, so its cells have no disruption null (no
// row, never a NaN).
TEST(AppendPatchingTest, NoThirdFactNoNullRow) {
  auto tok = datasets::LoadTestBpe();
  config::ModelConfig config =
      layers::testing::TinyModelConfig(tok->vocab_size(), 16, 2);
  config.set_context_length(32);
  torch::manual_seed(3);
  auto model = layers::GptImpl::Create(*layers::GptOptionsFromConfig(config));
  ASSERT_TRUE(model.ok()) << model.status();
  (*model)->eval();
  // Two capitals whose answer tokens differ, both given to one subject whose
  // prompt keeps the shared prefix's tokens.
  const std::vector<int64_t> prefix = PromptPrefix(*tok);
  const std::vector<Fact> candidates =
      *ParseFacts(absl::StrCat(kStates, kMoreStates), *tok, "f.csv");
  const Fact* first = nullptr;
  const Fact* second = nullptr;
  for (const Fact& f : candidates) {
    if (f.answer_id < 0) continue;
    if (first == nullptr &&
        std::equal(prefix.begin(), prefix.end(), f.prompt.begin())) {
      first = &f;
    } else if (first != nullptr && f.answer_id != first->answer_id) {
      second = &f;
      break;
    }
  }
  ASSERT_NE(second, nullptr);
  const std::vector<Fact> facts = *ParseFacts(
      absl::StrCat("capital,state\n", first->answer, ",", first->subject, "\n",
                   second->answer, ",", first->subject,
                   "\nSalem,New Hampshire North Carolina\n"),
      *tok, "f.csv");
  FactRecallTables tables;
  ASSERT_TRUE(AppendPatching("dense", 5, **model, PatchKind::kFfnHidden, facts,
                             *tok, prefix, tables)
                  .ok());
  const std::vector<std::string> patching =
      absl::StrSplit(tables.patching, '\n', absl::SkipEmpty());
  EXPECT_GT(patching.size(), 1u);
  EXPECT_EQ(tables.disruption_null.find('\n') + 1,
            tables.disruption_null.size())
      << tables.disruption_null;
  EXPECT_EQ(tables.patching.find("nan"), std::string::npos);
}

// Cosine distance (1 - cos), nearest first, among the database rows only;
// the scale of a vector does not matter, k is capped at the database.
TEST(NearestByCosineTest, DatabaseRowsByCosineDistanceNearestFirst) {
  const torch::Tensor vectors = torch::tensor(
      {{1.0, 0.0}, {0.0, 5.0}, {3.0, 3.0}, {-2.0, 0.0}, {1.0, 0.1}});
  const std::vector<std::vector<Neighbour>> nearest =
      NearestByCosine(vectors, {0, 1}, {1, 2, 3}, 2);
  ASSERT_EQ(nearest.size(), 2u);
  ASSERT_EQ(nearest[0].size(), 2u);
  EXPECT_EQ(nearest[0][0].row, 2);
  EXPECT_NEAR(nearest[0][0].distance, 1 - std::sqrt(0.5), 1e-6);
  EXPECT_EQ(nearest[0][1].row, 1);
  EXPECT_NEAR(nearest[0][1].distance, 1.0, 1e-6);
  EXPECT_EQ(nearest[1][0].row, 1);  // Itself, when in the database.
  EXPECT_NEAR(nearest[1][0].distance, 0.0, 1e-6);
  EXPECT_EQ(NearestByCosine(vectors, {4}, {3, 0}, 10)[0].size(), 2u);
  EXPECT_EQ(NearestByCosine(vectors, {4}, {3, 0}, 10)[0][0].row, 0);
  EXPECT_NEAR(NearestByCosine(vectors, {4}, {3, 0}, 10)[0][1].distance,
              1 + 1 / std::sqrt(1.01), 1e-6);
}

}  // namespace
}  // namespace sparse_layers::analysis
