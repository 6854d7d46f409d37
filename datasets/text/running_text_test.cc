#include "datasets/text/running_text.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace sparse_layers::datasets {
namespace {

// A byte-fallback vocabulary as SentencePiece spells and decodes it.
class FakeTokenizer : public Tokenizer {
 public:
  std::vector<int> Encode(const std::string&) const override { return {}; }
  std::string Decode(const std::vector<int>& ids) const override {
    std::string text;
    for (int id : ids) text += kDecoded[id];
    return text;
  }
  std::string Piece(int id) const override { return kPieces[id]; }
  int vocab_size() const override { return 5; }
  int eos_id() const override { return -1; }

 private:
  const std::vector<std::string> kPieces = {
      "<0x00>", "<0xE2>", std::string(kWordStart) + "the", "ing", "<0x0A>"};
  const std::vector<std::string> kDecoded = {
      std::string(1, '\0'), "\xEF\xBF\xBD", " the", "ing", "\n"};
};

TEST(RunningTextTest, UnprintablePiecesShowAsTheirPieces) {
  const FakeTokenizer tokenizer;
  EXPECT_EQ(PieceInRunningText(tokenizer, 0), "<0x00>");
  EXPECT_EQ(PieceInRunningText(tokenizer, 1), "<0xE2>");
  EXPECT_EQ(PieceInRunningText(tokenizer, 2), " the");
  EXPECT_EQ(PieceInRunningText(tokenizer, 3), "ing");
  EXPECT_EQ(PieceInRunningText(tokenizer, 4), "<0x0A>");
  EXPECT_EQ(MarkedContext(tokenizer, {2, 3, 0, 1}, 1, 1, 2),
            " the[[ing]]<0x00><0xE2>");
}

}  // namespace
}  // namespace sparse_layers::datasets
