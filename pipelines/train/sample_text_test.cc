#include "pipelines/train/sample_text.h"

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace sparse_layers::train {
namespace {

std::unique_ptr<datasets::Tokenizer> Bpe() {
  std::string error;
  auto tokenizer =
      datasets::Tokenizer::Load(std::string(std::getenv("TEST_SRCDIR")) +
                                    "/sparse_layers/datasets/text/bpe.model",
                                &error);
  EXPECT_NE(tokenizer, nullptr) << error;
  return tokenizer;
}

TEST(SampleTextTest, DecodesPromptAndContinuationAsTheTokenizerDoes) {
  const auto tokenizer = Bpe();
  const std::vector<int> prompt = tokenizer->Encode("The whale");
  const std::vector<int> continuation = tokenizer->Encode(" swam on.");
  TrainingSummary summary;
  summary.set_name("lm");
  for (int id : prompt) summary.add_sample_prompt_ids(id);
  for (int id : continuation) summary.add_sample_ids(id);
  absl::StatusOr<std::string> text = SampleText(summary, *tokenizer);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text, tokenizer->Decode(prompt) + "|" +
                       tokenizer->Decode(continuation) + "\n");
  EXPECT_EQ(tokenizer->Decode(prompt), "The whale");
}

TEST(SampleTextTest, NoSampleAndForeignIdsAreSaid) {
  const auto tokenizer = Bpe();
  TrainingSummary summary;
  summary.set_name("lm");
  EXPECT_EQ(*SampleText(summary, *tokenizer),
            "lm: no sample (eval.sample_tokens is 0)\n");
  summary.add_sample_prompt_ids(1);
  summary.add_sample_ids(tokenizer->vocab_size());
  const std::string size = std::to_string(tokenizer->vocab_size());
  EXPECT_EQ(SampleText(summary, *tokenizer).status().message(),
            "lm: sample token id " + size + " is outside the tokenizer's " +
                size + "-piece vocabulary");
}

}  // namespace
}  // namespace sparse_layers::train
