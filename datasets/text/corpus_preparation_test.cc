#include "datasets/text/corpus_preparation.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/common/digest.h"
#include "base/common/file_io.h"
#include "base/common/staged_outputs.h"
#include "datasets/text/corpus.pb.h"
#include "datasets/text/corpus_readers.h"
#include "datasets/text/document_split.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"

namespace sparse_layers::datasets {
namespace {

Document Doc(const std::string& id, const std::string& text = "text") {
  Document document;
  document.set_id(id);
  document.set_source("local");
  document.set_text(text);
  return document;
}

// A local corpus directory of one JSONL file: documents d0 .. d<n-1>, with
// d3's text empty.
std::string LocalCorpus(const std::string& name, int documents) {
  const std::string dir = absl::StrCat(std::getenv("TEST_TMPDIR"), "/", name);
  std::filesystem::create_directories(dir);
  std::string jsonl;
  for (int i = 0; i < documents; ++i) {
    absl::StrAppend(&jsonl,
                    DocumentToJson(Doc(absl::StrCat("d", i),
                                       i == 3 ? "" : absl::StrCat("doc ", i))),
                    "\n");
  }
  EXPECT_TRUE(WriteFileAtomically(dir + "/docs.jsonl", jsonl).ok());
  return dir;
}

// Options for a local corpus of `documents` documents, written to an existing
// output directory.
CorpusPreparationOptions LocalOptions(const std::string& name, int documents) {
  CorpusPreparationOptions options;
  options.sources = {"local:" + LocalCorpus(name, documents)};
  options.out_dir = absl::StrCat(std::getenv("TEST_TMPDIR"), "/", name, "_out");
  std::filesystem::create_directories(options.out_dir);
  return options;
}

TEST(KeepSmallestSampleHashesTest, KeepsTheSmallestInReadingOrder) {
  std::vector<std::pair<double, Document>> documents;
  const double units[] = {0.5, 0.1, 0.9, 0.3, 0.7};
  for (int i = 0; i < 5; ++i) {
    documents.emplace_back(units[i], Doc(std::string(1, 'a' + i)));
  }
  auto all = documents;
  KeepSmallestSampleHashes(all, 0);
  EXPECT_EQ(all.size(), 5u);
  KeepSmallestSampleHashes(all, 5);
  EXPECT_EQ(all.size(), 5u);
  KeepSmallestSampleHashes(documents, 3);
  ASSERT_EQ(documents.size(), 3u);
  EXPECT_EQ(documents[0].second.id(), "a");  // 0.5
  EXPECT_EQ(documents[1].second.id(), "b");  // 0.1
  EXPECT_EQ(documents[2].second.id(), "d");  // 0.3
}

TEST(ReadCorpusSourceTest, SamplesBySampleHashAndSkipsEmptyDocuments) {
  const std::string dir = LocalCorpus("sample", 40);
  auto all = ReadCorpusSource("local:" + dir, 0);
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(all->empty, 1);
  ASSERT_EQ(all->documents.size(), 39u);
  std::vector<double> units;
  for (const auto& [unit, document] : all->documents) {
    EXPECT_EQ(unit, DocumentHashUnit(document, "sample:")) << document.id();
    units.push_back(unit);
  }
  std::sort(units.begin(), units.end());
  auto sampled = ReadCorpusSource("local:" + dir, 10);
  ASSERT_TRUE(sampled.ok());
  ASSERT_EQ(sampled->documents.size(), 10u);
  int previous = -1;
  for (const auto& [unit, document] : sampled->documents) {
    EXPECT_LE(unit, units[9]) << document.id();
    const int number = std::stoi(document.id().substr(1));
    EXPECT_GT(number, previous);  // Reading order.
    previous = number;
  }
  EXPECT_FALSE(ReadCorpusSource("nosuch:" + dir, 0).ok());
}

TEST(PrepareCorpusTest, WritesEachDocumentToItsSplit) {
  CorpusPreparationOptions options = LocalOptions("corpus", 200);
  const std::string& out = options.out_dir;
  options.fractions = {0.1, 0.2};
  {
    StagedOutputs outputs;
    absl::Status prepared = PrepareCorpus(options, outputs);
    ASSERT_TRUE(prepared.ok()) << prepared;
    ASSERT_TRUE(outputs.Commit().ok());
  }
  int64_t total = 0;
  for (Split split : {Split::kTrain, Split::kValidation, Split::kTest}) {
    const std::string name(SplitName(split));
    auto jsonl = ReadFileToString(absl::StrCat(out, "/", name, ".jsonl"));
    ASSERT_TRUE(jsonl.ok());
    auto text =
        ReadFileToString(absl::StrCat(out, "/", name, ".manifest.textproto"));
    ASSERT_TRUE(text.ok());
    SplitManifest manifest;
    ASSERT_TRUE(
        google::protobuf::TextFormat::ParseFromString(*text, &manifest));
    EXPECT_EQ(manifest.split(), name);
    EXPECT_EQ(manifest.file(), name + ".jsonl");
    EXPECT_EQ(manifest.sha256(), Sha256Hex(*jsonl));
    EXPECT_EQ(manifest.split_rule(), SplitRuleDescription(options.fractions));
    int64_t lines = 0;
    for (absl::string_view line :
         absl::StrSplit(*jsonl, '\n', absl::SkipEmpty())) {
      auto document = ParseJsonDocument(line);
      ASSERT_TRUE(document.ok());
      EXPECT_EQ(AssignSplit(*document, options.fractions), split)
          << document->id();
      EXPECT_NE(document->id(), "d3");  // Empty: skipped.
      ++lines;
    }
    EXPECT_EQ(manifest.documents(), lines);
    EXPECT_GT(lines, 0);
    total += lines;
  }
  EXPECT_EQ(total, 199);
}

TEST(PrepareCorpusTest, FailsOnAnEmptySplit) {
  // One document: train holds it, validation is empty.
  const CorpusPreparationOptions options = LocalOptions("one", 1);
  ASSERT_EQ(AssignSplit(Doc("d0", "doc 0"), options.fractions), Split::kTrain);
  StagedOutputs outputs;
  EXPECT_EQ(std::string(PrepareCorpus(options, outputs).message()),
            "the validation split is empty; add documents or raise its "
            "fraction");
}

}  // namespace
}  // namespace sparse_layers::datasets
