// The built tokenizer (the active scale's :bpe) on held-out documents.
#include "datasets/text/tokenizer.h"

#include <cstdlib>
#include <fstream>
#include <string>

#include "absl/strings/str_split.h"
#include "base/common/file_io.h"
#include "datasets/text/corpus_readers.h"
#include "gtest/gtest.h"

namespace sparse_layers::datasets {
namespace {

std::string Runfile(const std::string& path) {
  return std::string(std::getenv("TEST_SRCDIR")) + "/sparse_layers/" + path;
}

TEST(TokenizerTest, WordOfPieceStripsOnlyTheWordStartMarker) {
  std::string error;
  auto tokenizer = Tokenizer::Load(Runfile("datasets/text/bpe.model"), &error);
  ASSERT_NE(tokenizer, nullptr) << error;
  int words = 0;
  for (int id = 0; id < tokenizer->vocab_size(); ++id) {
    const std::string piece = tokenizer->Piece(id);
    const std::string word = tokenizer->WordOfPiece(id);
    if (piece.rfind(kWordStart, 0) == 0 && piece != kWordStart) {
      EXPECT_EQ(kWordStart + word, piece) << id;
      ++words;
    } else {
      EXPECT_EQ(word, "") << piece;
    }
  }
  EXPECT_GT(words, 50);
  const int the = tokenizer->Encode("the").at(0);
  EXPECT_EQ(tokenizer->Piece(the), "\xe2\x96\x81the");
  EXPECT_EQ(tokenizer->WordOfPiece(the), "the");
  EXPECT_EQ(tokenizer->EncodeWord("the"), std::vector<int>{the});
  EXPECT_EQ(tokenizer->WordOfPiece(tokenizer->eos_id()), "");
}

TEST(TokenizerTest, RoundTripsHeldOutDocumentsExactly) {
  std::string error;
  auto tokenizer = Tokenizer::Load(Runfile("datasets/text/bpe.model"), &error);
  ASSERT_NE(tokenizer, nullptr) << error;
  EXPECT_GE(tokenizer->vocab_size(), 512);
  EXPECT_EQ(tokenizer->eos_id(), 2);

  absl::StatusOr<std::string> validation =
      ReadFileToString(Runfile("datasets/text/mixed/validation.jsonl"));
  ASSERT_TRUE(validation.ok());
  int documents = 0;
  int64_t bytes = 0;
  int64_t tokens = 0;
  for (absl::string_view line :
       absl::StrSplit(*validation, '\n', absl::SkipEmpty())) {
    absl::StatusOr<Document> document = ParseJsonDocument(line);
    ASSERT_TRUE(document.ok());
    const std::vector<int> ids = tokenizer->Encode(document->text());
    EXPECT_EQ(tokenizer->Decode(ids), document->text()) << document->id();
    ++documents;
    bytes += document->text().size();
    tokens += ids.size();
  }
  EXPECT_GT(documents, 0);
  // BPE compresses English text: fewer tokens than bytes.
  EXPECT_LT(tokens, bytes);
}

TEST(TokenizerTest, ByteFallbackCoversUnseenCharacters) {
  std::string error;
  auto tokenizer = Tokenizer::Load(Runfile("datasets/text/bpe.model"), &error);
  ASSERT_NE(tokenizer, nullptr) << error;
  const std::string unusual =
      "  double  spaces\n\ttab, emoji \xF0\x9F\x98\x80 and \xE4\xB8\xAD";
  const std::vector<int> ids = tokenizer->Encode(unusual);
  EXPECT_EQ(tokenizer->Decode(ids), unusual);
  for (int id : ids) EXPECT_NE(id, 0) << "unknown piece";  // 0 is <unk>.
  bool has_byte_piece = false;
  for (int id : ids)
    has_byte_piece |= tokenizer->Piece(id).rfind("<0x", 0) == 0;
  EXPECT_TRUE(has_byte_piece);
}

TEST(TokenizerTest, MissingModelIsAnError) {
  std::string error;
  EXPECT_EQ(Tokenizer::Load("/nonexistent.model", &error), nullptr);
  EXPECT_NE(error.find("nonexistent"), std::string::npos);
}

}  // namespace
}  // namespace sparse_layers::datasets
