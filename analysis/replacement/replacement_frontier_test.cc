#include "analysis/replacement/replacement_frontier.h"

#include <torch/torch.h>

#include "gtest/gtest.h"

namespace sparse_layers::analysis {
namespace {

// W_n = D diag(c_n) has the rank of c_n's support when D has full column
// rank, so the normalised rank (MxD Eq. 23) is the share of nonzero c_n
// entries; the sampled experts are n = i N / samples.
TEST(MeanExpertRankTest, RankOfEachSampledExpertsSupport) {
  torch::manual_seed(1);
  layers::ReplacementOptions options;
  options.d_in = options.d_out = 4;
  options.d_ffn = 6;  // H > O: min(H, O) = 4.
  options.n_experts = 8;
  options.top_k = 2;
  layers::MxdImpl mxd(options, layers::MxdImpl::Encoder::kGelu);
  torch::NoGradGuard no_grad;
  mxd.decoder.copy_(torch::randn({6, 4}));
  mxd.experts.fill_(1.0);
  EXPECT_DOUBLE_EQ(MeanExpertRank(mxd, 3), 1.0);
  // Experts 0, 2, 5 are sampled at 3 of 8: half of expert 2's entries zero.
  mxd.experts[2].slice(0, 0, 2).zero_();
  mxd.experts[1].zero_();  // Not sampled.
  EXPECT_DOUBLE_EQ(MeanExpertRank(mxd, 3), (1.0 + 0.5 + 1.0) / 3);
  // Samples above N read every expert once.
  EXPECT_DOUBLE_EQ(MeanExpertRank(mxd, 100), (6 * 1.0 + 0.5 + 0.0) / 8);
}

// MxD Fig. 20's bins: log10(f + 1e-10) in 20 bins of 0.5 over [-10, 0].
TEST(FrequencyHistogramTest, BinsOfLogFrequency) {
  // Never fired (-10), 1e-3 (-3: bin [-3, -2.5)), 0.05 (-1.3), always (0).
  const auto histogram =
      FrequencyHistogram(torch::tensor({0.0, 1e-3, 0.05, 1.0}, torch::kDouble));
  ASSERT_EQ(histogram.size(), 20u);
  EXPECT_DOUBLE_EQ(histogram[0].first, -9.75);
  EXPECT_DOUBLE_EQ(histogram[0].second, 0.25);
  EXPECT_DOUBLE_EQ(histogram[14].first, -2.75);
  EXPECT_DOUBLE_EQ(histogram[14].second, 0.25);
  EXPECT_DOUBLE_EQ(histogram[17].second, 0.25);  // [-1.5, -1): 0.05.
  EXPECT_DOUBLE_EQ(histogram[19].second, 0.25);  // Clamped into the last.
  double total = 0;
  for (const auto& [bin, share] : histogram) total += share;
  EXPECT_DOUBLE_EQ(total, 1.0);
}

}  // namespace
}  // namespace sparse_layers::analysis
