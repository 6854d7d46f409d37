#include "analysis/replacement/output_faithfulness.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "models/gpt.h"
#include "models/tiny_gpt.h"

namespace sparse_layers::analysis {
namespace {

std::shared_ptr<layers::GptImpl> TinyModel(uint64_t seed) {
  layers::GptOptions options = layers::testing::TinyGptOptions(40, 16, 2);
  options.context_length = 8;
  torch::manual_seed(seed);
  auto model = *layers::GptImpl::Create(options);
  model->eval();
  return model;
}

// Reference: the whole logits tensor of the last context_length tokens.
torch::Tensor ReferenceGreedy(layers::GptImpl& model, torch::Tensor sequence,
                              int new_tokens) {
  torch::NoGradGuard no_grad;
  const int64_t prompt = sequence.size(1);
  for (int step = 0; step < new_tokens; ++step) {
    const int64_t start =
        std::max<int64_t>(0, sequence.size(1) - model.options().context_length);
    const torch::Tensor logits = model.forward(sequence.slice(1, start));
    const torch::Tensor next = logits.index({torch::indexing::Slice(), -1})
                                   .argmax(-1, /*keepdim=*/true);
    sequence = torch::cat({sequence, next}, 1);
  }
  return sequence.slice(1, prompt);
}

TEST(GreedyContinuationsTest, MatchesTheFullLogitsArgmaxPastTheContext) {
  auto model = TinyModel(1);
  const torch::Tensor prompts = torch::randint(0, 40, {5, 3}, torch::kLong);
  // 3 + 9 tokens outgrow the context of 8: the window slides.
  const torch::Tensor generated = GreedyContinuations(*model, prompts, 9);
  ASSERT_EQ(generated.sizes(), (std::vector<int64_t>{5, 9}));
  EXPECT_TRUE(generated.equal(ReferenceGreedy(*model, prompts, 9)));
  // Prompts longer than the context: the model reads their last 8 tokens.
  const torch::Tensor long_prompts =
      torch::randint(0, 40, {20, 10}, torch::kLong);
  EXPECT_TRUE(GreedyContinuations(*model, long_prompts, 3)
                  .equal(ReferenceGreedy(*model, long_prompts, 3)));
}

TEST(PrefixMatchCurveTest, CountsRowsWhoseWholePrefixAgrees) {
  const torch::Tensor a =
      torch::tensor({1, 2, 3, 1, 2, 3, 4, 5, 6}, torch::kLong).view({3, 3});
  const torch::Tensor b =
      torch::tensor({1, 2, 3, 1, 9, 3, 0, 5, 6}, torch::kLong).view({3, 3});
  const std::vector<double> curve = PrefixMatchCurve(a, b);
  ASSERT_EQ(curve.size(), 3u);
  // Row 3 agrees at t = 2 and 3 but not at t = 1, so it never counts.
  EXPECT_DOUBLE_EQ(curve[0], 2.0 / 3);
  EXPECT_DOUBLE_EQ(curve[1], 1.0 / 3);
  EXPECT_DOUBLE_EQ(curve[2], 1.0 / 3);
}

TEST(CompareNextTokensTest, IsZeroForTheSameModelAndTorchsKlOtherwise) {
  auto reference = TinyModel(1);
  auto other = TinyModel(2);
  const std::vector<torch::Tensor> windows = {
      torch::randint(0, 40, {3, 8}, torch::kLong),
      torch::randint(0, 40, {2, 8}, torch::kLong)};
  const std::vector<torch::Tensor> log_p =
      NextTokenLogProbs(*reference, windows);

  const NextTokenAgreement same = CompareNextTokens(log_p, *reference, windows);
  EXPECT_NEAR(same.kl, 0, 1e-6);
  EXPECT_DOUBLE_EQ(same.top1_agreement, 1);

  const NextTokenAgreement differ = CompareNextTokens(log_p, *other, windows);
  double kl = 0, agree = 0;
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < windows.size(); ++i) {
    const torch::Tensor log_q =
        torch::log_softmax(other->forward(windows[i]), -1);
    kl += torch::kl_div(log_q, log_p[i], at::Reduction::Sum,
                        /*log_target=*/true)
              .item<double>();
    agree += log_q.argmax(-1).eq(log_p[i].argmax(-1)).sum().item<double>();
  }
  EXPECT_GT(differ.kl, 1e-3);
  EXPECT_NEAR(differ.kl, kl / 40, 1e-5);
  EXPECT_DOUBLE_EQ(differ.top1_agreement, agree / 40);
}

// Decodes id i as "w<i>", ids joined by spaces; id 9 is a newline.
class WordTokenizer : public datasets::Tokenizer {
 public:
  std::vector<int> Encode(const std::string&) const override { return {}; }
  std::string Decode(const std::vector<int>& ids) const override {
    std::vector<std::string> words;
    for (int id : ids)
      words.push_back(id == 9 ? "\n" : "w" + std::to_string(id));
    return absl::StrJoin(words, " ");
  }
  std::string Piece(int id) const override { return Decode({id}); }
  int vocab_size() const override { return 10; }
  int eos_id() const override { return 0; }
};

TEST(ExampleLineTest, SplitsWhereTheContinuationFirstDiffers) {
  const WordTokenizer tokenizer;
  const torch::Tensor base = torch::tensor({1, 2, 3, 4}, torch::kLong);
  EXPECT_EQ(ExampleLine("mxd", torch::tensor({1, 2, 5, 4}, torch::kLong), base,
                        tokenizer),
            "  mxd (2 identical): w1 w2 || w5 w4\n");
  EXPECT_EQ(ExampleLine("tc", base, base, tokenizer),
            "  tc (4 identical): w1 w2 w3 w4\n");
  // A generated newline stays inside the example's line.
  EXPECT_EQ(ExampleLine("sae", torch::tensor({9, 2, 3, 4}, torch::kLong), base,
                        tokenizer),
            "  sae (0 identical):  ||   w2 w3 w4\n");
}

}  // namespace
}  // namespace sparse_layers::analysis
