#include "config/parameter_matching.h"

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

// Fig. 12 of arXiv:2505.21364 at our cpu scale: d = 128, H = 512, Transcoder
// width 32 d. Lower rank buys more experts within the same budget.
TEST(ParameterMatchingTest, CpMoeRankAndExpertsFillTheTranscoderBudget) {
  EXPECT_EQ(CpMoeRank(512, 128, 1.0), 128);
  EXPECT_EQ(CpMoeRank(512, 128, 0.25), 32);
  EXPECT_EQ(CpMoeRank(512, 128, 1.0 / 16), 8);
  EXPECT_EQ(CpMoeRank(512, 128, 1e-6), 1);
  const int64_t budget = TranscoderParameters(128, 128, 4096);
  int64_t previous = 0;
  for (const int64_t rank : {128, 32, 8}) {
    const int64_t n = CpMoeExpertsMatchingTranscoder(128, 128, 512, rank, 4096);
    EXPECT_LE(CpMoeParameters(128, 128, 512, rank, n), budget) << rank;
    EXPECT_GT(CpMoeParameters(128, 128, 512, rank, n + 1), budget) << rank;
    EXPECT_GT(n, previous) << rank;
    previous = n;
  }
}

}  // namespace
}  // namespace sparse_layers::config
