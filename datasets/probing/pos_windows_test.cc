#include "datasets/probing/pos_windows.h"

#include <gtest/gtest.h>

namespace sparse_layers::datasets {
namespace {

TEST(PosWindowsTest, CoarseClassesFollowTheBrownTagset) {
  EXPECT_EQ(CoarsePosClass("nn"), "noun");
  EXPECT_EQ(CoarsePosClass("nns$"), "noun");
  EXPECT_EQ(CoarsePosClass("np-tl"), "noun");
  EXPECT_EQ(CoarsePosClass("VBD"), "verb");
  EXPECT_EQ(CoarsePosClass("vbn-hl"), "verb");
  EXPECT_EQ(CoarsePosClass("jjt"), "adjective");
  EXPECT_EQ(CoarsePosClass("rb"), "adverb");
  EXPECT_EQ(CoarsePosClass("in"), "preposition");
  EXPECT_EQ(CoarsePosClass("in-tl"), "preposition");  // in a title
  EXPECT_EQ(CoarsePosClass("at-hl"), "determiner");   // in a headline
  EXPECT_EQ(CoarsePosClass("at"), "determiner");
  EXPECT_EQ(CoarsePosClass("dts"), "determiner");
  EXPECT_EQ(CoarsePosClass("ppss"), "pronoun");
  EXPECT_EQ(CoarsePosClass("pp$"), "pronoun");
  // Outside the seven classes: punctuation, modals, conjunctions, particles,
  // contractions, and "rp" is not an adverb.
  for (const char* tag :
       {".", ",", "md", "cc", "cs", "rp", "ppss+md", "to", "fw-nn"}) {
    EXPECT_EQ(CoarsePosClass(tag), "") << tag;
  }
}

TEST(PosWindowsTest, OneWindowPerClassedWordWithinItsParagraph) {
  const std::string tagged =
      "\n\n\tThe/at jury/nn said/vbd ./.\n\n\tIt/pps ran/vbd fast/rb ./.\n";
  const std::vector<PosExample> examples = PosWindows(tagged, 1);
  ASSERT_EQ(examples.size(), 6u);
  EXPECT_EQ(examples[0].text, "The");
  EXPECT_EQ(examples[0].label, "determiner");
  EXPECT_EQ(examples[1].text, "The jury");
  EXPECT_EQ(examples[1].label, "noun");
  EXPECT_EQ(examples[2].text, "jury said");  // one word of context
  EXPECT_EQ(examples[2].label, "verb");
  // The second paragraph starts afresh; "." (word 3) has no class.
  EXPECT_EQ(examples[3].text, "It");
  EXPECT_EQ(examples[3].label, "pronoun");
  EXPECT_EQ(examples[3].word_index, 4);
  EXPECT_EQ(examples[5].text, "ran fast");
  EXPECT_EQ(examples[5].label, "adverb");
}

}  // namespace
}  // namespace sparse_layers::datasets
