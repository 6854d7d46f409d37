#include "models/sampling.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "gtest/gtest.h"
#include "models/tiny_gpt.h"

namespace sparse_layers::layers {
namespace {

TEST(NucleusTest, KeepsTheSmallestSetReachingTopP) {
  // Probabilities 0.5, 0.3, 0.15, 0.05 (as logits).
  const torch::Tensor logits =
      torch::log(torch::tensor({0.15, 0.5, 0.05, 0.3}, torch::kDouble));
  const torch::Tensor p = NucleusProbabilities(logits, 1.0, 0.75);
  // 0.5 + 0.3 = 0.8 >= 0.75: tokens 1 and 3 remain, renormalised.
  EXPECT_NEAR(p[1].item<double>(), 0.5 / 0.8, 1e-12);
  EXPECT_NEAR(p[3].item<double>(), 0.3 / 0.8, 1e-12);
  EXPECT_EQ(p[0].item<double>(), 0);
  EXPECT_EQ(p[2].item<double>(), 0);
  // top_p = 1 keeps the full softmax.
  EXPECT_NEAR(NucleusProbabilities(logits, 1.0, 1.0)[2].item<double>(), 0.05,
              1e-12);
}

TEST(NucleusTest, TemperatureSharpensAndZeroIsGreedy) {
  const torch::Tensor logits = torch::tensor({1.0, 2.0, 0.0}, torch::kDouble);
  const torch::Tensor half = NucleusProbabilities(logits, 0.5, 1.0);
  const torch::Tensor expected = torch::softmax(logits / 0.5, 0);
  EXPECT_TRUE(torch::allclose(half, expected));
  const torch::Tensor greedy = NucleusProbabilities(logits, 0.0, 0.9);
  EXPECT_EQ(greedy[1].item<double>(), 1.0);
  EXPECT_EQ(greedy.sum().item<double>(), 1.0);
}

// The one-row loop written plainly: the whole window's logits each step, the
// penalty from a bincount of the sequence so far.
std::vector<int64_t> ReferenceSample(GptImpl& model,
                                     std::vector<int64_t> sequence,
                                     const SamplingOptions& options) {
  torch::NoGradGuard no_grad;
  auto generator = at::make_generator<at::CPUGeneratorImpl>(options.seed);
  std::vector<int64_t> generated;
  const int64_t context = model.options().context_length;
  for (int i = 0; i < options.new_tokens; ++i) {
    const int64_t start =
        std::max<int64_t>(0, static_cast<int64_t>(sequence.size()) - context);
    const torch::Tensor tokens =
        torch::tensor(
            std::vector<int64_t>(sequence.begin() + start, sequence.end()))
            .unsqueeze(0);
    torch::Tensor logits = model.forward(tokens)[0][-1];
    logits = logits -
             options.frequency_penalty *
                 torch::bincount(torch::tensor(sequence), {}, logits.size(0))
                     .to(logits.dtype());
    const int64_t next =
        torch::multinomial(
            NucleusProbabilities(logits, options.temperature, options.top_p), 1,
            false, generator)
            .item<int64_t>();
    sequence.push_back(next);
    generated.push_back(next);
    if (next == options.stop_id) break;
  }
  return generated;
}

// Rows decoded as one batch equal the plain one-row loop with each row's
// seed, through a sliding window, a frequency penalty and a row that stops.
TEST(SampleTest, RowsDecodedTogetherEqualOneRowRuns) {
  GptOptions options = testing::TinyGptOptions(20, 16, 1);
  options.context_length = 8;
  torch::manual_seed(0);
  auto model = *GptImpl::Create(options);
  model->eval();
  SamplingOptions sampling;
  sampling.new_tokens = 12;
  sampling.frequency_penalty = 0.5;
  sampling.seed = 5;
  // Row 0 (seed 5) stops at its third token.
  sampling.stop_id = ReferenceSample(*model, {1, 2, 3}, sampling).at(2);
  const std::vector<std::vector<int64_t>> rows =
      SampleRows(*model, {1, 2, 3}, sampling, {5, 6, 7, 5});
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_LE(rows[0].size(), 3u);
  EXPECT_EQ(rows[0], rows[3]);
  size_t longest = 0;
  for (size_t r = 0; r < rows.size(); ++r) {
    sampling.seed = r == 3 ? 5 : 5 + r;
    EXPECT_EQ(rows[r], ReferenceSample(*model, {1, 2, 3}, sampling))
        << "row " << r;
    longest = std::max(longest, rows[r].size());
  }
  EXPECT_GT(longest, 3u) << "no row outlived the stopped one";
  EXPECT_EQ(Sample(*model, {1, 2, 3}, sampling), rows[0]);
}

TEST(SampleTest, IsSeededAndRespectsTheContextWindow) {
  GptOptions options = testing::TinyGptOptions(20, 16, 1);
  options.context_length = 8;
  torch::manual_seed(0);
  auto model = *GptImpl::Create(options);
  SamplingOptions sampling;
  sampling.new_tokens = 12;  // Longer than the context: the window slides.
  sampling.seed = 5;
  const auto a = Sample(*model, {1, 2, 3}, sampling);
  const auto b = Sample(*model, {1, 2, 3}, sampling);
  EXPECT_EQ(a.size(), 12u);
  EXPECT_EQ(a, b);
  sampling.temperature = 0;
  const auto greedy = Sample(*model, {1, 2, 3}, sampling);
  sampling.seed = 6;
  EXPECT_EQ(Sample(*model, {1, 2, 3}, sampling), greedy);
}

// A huge frequency penalty forbids repeats: greedy decoding then never emits
// a token already in the sequence (20 ids, 3 in the prompt, 12 new).
TEST(SampleTest, FrequencyPenaltyDiscouragesRepeatedTokens) {
  GptOptions options = testing::TinyGptOptions(20, 16, 1);
  options.context_length = 32;
  torch::manual_seed(0);
  auto model = *GptImpl::Create(options);
  SamplingOptions sampling;
  sampling.new_tokens = 12;
  sampling.temperature = 0;
  sampling.frequency_penalty = 1e6;
  const auto generated = Sample(*model, {1, 2, 3}, sampling);
  std::set<int64_t> seen = {1, 2, 3};
  for (int64_t id : generated) EXPECT_TRUE(seen.insert(id).second) << id;
}

}  // namespace
}  // namespace sparse_layers::layers
