#include "analysis/replacement/replacement_frontier.h"

#include <torch/torch.h>

#include <filesystem>

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
  EXPECT_DOUBLE_EQ(*MeanExpertRank(mxd, 3), 1.0);
  // Experts 0, 2, 5 are sampled at 3 of 8: half of expert 2's entries zero.
  mxd.experts[2].slice(0, 0, 2).zero_();
  mxd.experts[1].zero_();  // Not sampled.
  EXPECT_DOUBLE_EQ(*MeanExpertRank(mxd, 3), (1.0 + 0.5 + 1.0) / 3);
  // Samples above N read every expert once.
  EXPECT_DOUBLE_EQ(*MeanExpertRank(mxd, 100), (6 * 1.0 + 0.5 + 0.0) / 8);
}

// A CP-MoE's experts U2 diag(U1[n]) U3 have rank R (MxD App. B.4.1): R = 2 of
// min(H, O) = 4; an expert whose U1 row is zero has rank 0; a Transcoder has
// no expert matrices.
TEST(MeanExpertRankTest, CpMoeExpertsHaveTheirDecoderRank) {
  torch::manual_seed(2);
  layers::ReplacementOptions options;
  options.d_in = options.d_out = 4;
  options.d_ffn = 6;
  options.n_experts = 4;
  options.top_k = 2;
  layers::CpMoeImpl cp(options, /*rank=*/2);
  torch::NoGradGuard no_grad;
  cp.u3.copy_(torch::randn({2, 4}));
  EXPECT_DOUBLE_EQ(*MeanExpertRank(cp, 4), 0.5);
  cp.u1[3].zero_();
  EXPECT_DOUBLE_EQ(*MeanExpertRank(cp, 4), 0.5 * 3 / 4);
  options.d_ffn = 8;
  layers::TranscoderImpl tc(options, /*skip=*/false);
  EXPECT_FALSE(MeanExpertRank(tc, 4).has_value());
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

// Rows along x fire unit 0, rows along y unit 1 (k = 1); the two negative
// rows fire nothing. 3 of the 6 rows' largest code is unit 0, so the
// shared-expert rate is 0.5: a row without a firing code has no top unit
// (its zero code's index is a tie; it used to be counted).
TEST(UsageOfUnitsTest, FrequenciesAndSharedExpertRateByHand) {
  const std::string dir = ::testing::TempDir() + "/usage_of_units";
  std::filesystem::create_directories(dir);
  datasets::ActivationManifest header;
  header.set_split("test");
  header.set_d_in(2);
  header.set_d_out(2);
  datasets::ActivationWriter writer(dir, header, 16);
  const torch::Tensor x =
      torch::tensor({1.0f, 0.0f, 2.0f, 0.0f, 0.0f, 1.0f, 3.0f, 0.0f, -1.0f,
                     -2.0f, -0.5f, -3.0f})
          .view({6, 2});
  ASSERT_TRUE(writer.Append(x, x).ok());
  ASSERT_TRUE(writer.Finish().ok());
  auto data =
      datasets::ActivationSet::Open(dir + "/test.activations.textproto");
  ASSERT_TRUE(data.ok()) << data.status();
  layers::ReplacementOptions options;
  options.d_in = options.d_out = 2;
  options.d_ffn = 3;
  options.top_k = 1;
  layers::TranscoderImpl transcoder(options, /*skip=*/false);
  {
    torch::NoGradGuard no_grad;
    transcoder.encoder.copy_(
        torch::tensor({1.0f, 0.0f, 0.0f, 0.0f, 1.0f, 0.0f}).view({2, 3}));
    // Unit 2 never fires; the negative rows' largest (zero) code is unit 0's.
    transcoder.encoder_bias.copy_(torch::tensor({0.0f, 0.0f, -5.0f}));
  }
  const UnitUsage usage = UsageOfUnits(transcoder, **data, false, 100);
  EXPECT_TRUE(torch::allclose(
      usage.frequencies, torch::tensor({0.5, 1.0 / 6, 0.0}, torch::kDouble)))
      << usage.frequencies;
  EXPECT_DOUBLE_EQ(usage.shared_expert_rate, 0.5);
  // Dense: firing on more than 10% of rows (units 0 and 1), strictly.
  EXPECT_DOUBLE_EQ(DenseFraction(usage.frequencies, 0.1), 2.0 / 3);
  EXPECT_DOUBLE_EQ(DenseFraction(usage.frequencies, 0.5), 0.0);
}

}  // namespace
}  // namespace sparse_layers::analysis
