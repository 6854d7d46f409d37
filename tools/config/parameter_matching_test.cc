#include "tools/config/parameter_matching.h"

#include "gtest/gtest.h"

namespace sparse_layers::config {
namespace {

TEST(ParameterMatchingTest, ReproducesTheMxdPaperExpertCounts) {
  // GPT-2: I = O = 768, H = 3072, Transcoder width 32 x 768 (MxD,
  // arXiv:2505.21364 Table 6); N as the authors' released train_gpt2.py
  // computes it.
  EXPECT_EQ(TranscoderParameters(768, 768, 24576), 37774080);
  EXPECT_EQ(MxdExpertsMatchingTranscoder(768, 768, 3072, 24576, false,
                                         MatchingFormula::kReleasedCode),
            21490);
  EXPECT_EQ(MxdExpertsMatchingTranscoder(768, 768, 3072, 24576, false,
                                         MatchingFormula::kExact),
            21504);
  EXPECT_EQ(MxdParameters(768, 768, 3072, 21490, false), 37752562);
  // Llama-3.2-3B SwiGLU MxD.
  EXPECT_EQ(MxdExpertsMatchingTranscoder(3072, 3072, 8192, 98304, true,
                                         MatchingFormula::kReleasedCode),
            86015);
  EXPECT_EQ(MxdParameters(3072, 3072, 8192, 86015, true), 604079103);
}

}  // namespace
}  // namespace sparse_layers::config
