#include "analysis/probing/feature_absorption.h"

#include <torch/torch.h>

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "analysis/probing/sparse_probing.h"
#include "datasets/text/test_bpe.h"
#include "gtest/gtest.h"
#include "layers/replacement/sparse_replacement.h"
#include "models/tiny_gpt.h"
#include "ops/hooks/hook_point.h"

namespace sparse_layers::analysis {
namespace {

AbsorptionOptions Defaults() { return AbsorptionOptions(); }

// Codes, cosines with the probe direction (unit decoder rows: also their
// projections), and the main latents {0}.
WordAbsorption Absorb(std::vector<double> codes, std::vector<double> cosines,
                      double probe_projection,
                      std::vector<int64_t> main_latents = {0}) {
  const torch::Tensor c = torch::tensor(cosines, torch::kDouble);
  return AbsorptionOfWord(torch::tensor(codes, torch::kDouble), c, c,
                          main_latents, probe_projection, Defaults());
}

// SAEBench's rules, case by case (its FeatureAbsorptionCalculator).
TEST(AbsorptionOfWordTest, MainLatentCarryingTheProjectionIsNoAbsorption) {
  const WordAbsorption word = Absorb({2, 0, 0}, {0.5, 0.9, 0.9}, 1.0);
  EXPECT_EQ(word.fraction, 0);
  EXPECT_FALSE(word.full);
}

TEST(AbsorptionOfWordTest, SilentMainLatentAndOneAlignedLatentIsFull) {
  // Latent 2 carries 0.6 of the probe projection 1 with cosine 0.3.
  const WordAbsorption word = Absorb({0, 0, 2}, {0.9, 0.9, 0.3}, 1.0);
  EXPECT_EQ(word.fraction, 1);
  EXPECT_TRUE(word.full);
}

TEST(AbsorptionOfWordTest, PartialAbsorptionSharesTheProjection) {
  // Main 0.5, absorber 0.5 of a projection of 1: fraction 0.5/(0.5+0.5).
  const WordAbsorption word = Absorb({1, 0.5, 0}, {0.5, 1.0, 0.9}, 1.0);
  EXPECT_NEAR(word.fraction, 0.5, 1e-12);
  EXPECT_FALSE(word.full);  // The main latent fired.
  // The absorbed share is capped at what the main latent leaves: 0.3.
  EXPECT_NEAR(Absorb({1.4, 2, 0}, {0.5, 1.0, 0.9}, 1.0).fraction, 0.3 / 1.0,
              1e-12);
}

TEST(AbsorptionOfWordTest, WeaklyAlignedOrSmallAbsorbersDoNotCount) {
  // Cosine 0.05 < 0.1: no absorber for the fraction; but >= 0.025 for full.
  const WordAbsorption weak = Absorb({0, 20, 0}, {0.9, 0.05, 0}, 1.0);
  EXPECT_EQ(weak.fraction, 0);
  EXPECT_TRUE(weak.full);
  // Aligned but only 0.3 of the projection: below the 0.4 share.
  EXPECT_EQ(Absorb({0, 0.3, 0}, {0.9, 1.0, 0}, 1.0).fraction, 0);
  // At most three absorbers add up: four of 0.12 reach 0.36 < 0.4.
  EXPECT_EQ(
      Absorb({0, 0.12, 0.12, 0.12, 0.12}, {0.9, 1, 1, 1, 1}, 1.0).fraction, 0);
  EXPECT_EQ(
      Absorb({0, 0.14, 0.14, 0.14, 0.14}, {0.9, 1, 1, 1, 1}, 1.0).fraction, 1);
}

TEST(AbsorptionOfWordTest, MainLatentsTogetherAndProbeBelowZero) {
  // Two main latents carry 0.3 + 0.3 of 1; an absorber carries 0.5: the
  // absorbed share is what the main latents leave, 0.4 of 1.
  EXPECT_NEAR(Absorb({0.6, 0.6, 0.5}, {0.5, 0.5, 1.0}, 1.0, {0, 1}).fraction,
              0.4, 1e-12);
  // A word the probe projects below zero: no full absorption.
  EXPECT_FALSE(Absorb({0, 0, 2}, {0.9, 0.9, 0.3}, -0.5).full);
  // The recovered share is every latent's projection over the probe's.
  EXPECT_NEAR(Absorb({1, 0.5, 0}, {0.5, 1.0, 0.9}, 2.0).recovered, 0.5, 1e-12);
}

// Shares use the decoder row's projection, thresholds its cosine: a row of
// norm 2 at cosine 0.3 carries 0.6 of a unit activation.
TEST(AbsorptionOfWordTest, SharesUseTheRowsProjectionNotItsCosine) {
  const WordAbsorption word = AbsorptionOfWord(
      torch::tensor({0.0, 1.0}, torch::kDouble),
      torch::tensor({0.9, 0.3}, torch::kDouble),
      torch::tensor({0.9, 0.6}, torch::kDouble), {0}, 1.0, Defaults());
  EXPECT_EQ(word.fraction, 1);
  EXPECT_TRUE(word.full);
}

TEST(MainLatentCountTest, LongestPrefixOfF1Jumps) {
  EXPECT_EQ(MainLatentCount({0.5, 0.6, 0.61, 0.9}, 0.03), 2);
  EXPECT_EQ(MainLatentCount({0.0, 0.0}, 0.03), 1);
  EXPECT_EQ(MainLatentCount({0.2, 0.4, 0.6}, 0.03), 3);
  EXPECT_EQ(MainLatentCount({}, 0.03), 0);
}

// With one feature it is FitBalancedLogistic (sklearn's objective).
TEST(FitBalancedLogisticOnFeaturesTest, OneFeatureMatchesTheOneFeatureFit) {
  torch::manual_seed(3);
  const torch::Tensor x = torch::randn({200});
  const torch::Tensor labels = (x + 0.8 * torch::randn({200})) > 0.3;
  const LogisticFit one = FitBalancedLogistic(x, labels);
  const MultiLogisticFit many =
      FitBalancedLogisticOnFeatures(x.unsqueeze(1), labels);
  EXPECT_NEAR(many.weight[0].item<double>(), one.weight, 1e-8);
  EXPECT_NEAR(many.bias, one.bias, 1e-8);
  // Two features: a noise column gets a small weight next to the signal.
  const torch::Tensor two = torch::stack({x, torch::randn({200})}, 1);
  const MultiLogisticFit both = FitBalancedLogisticOnFeatures(two, labels);
  EXPECT_GT(both.weight[0].item<double>(),
            5 * std::abs(both.weight[1].item<double>()));
}

// Letters a, b, c (120 words each) in 8 dimensions: a-words are e0, except
// every fourth, e0 + e3; b-words e1 and c-words e2, every second + e3 (so e3
// does not predict a; plus noise). The
// ReLU SAE's latents 0-2 read e0 - 2 e3, e1 and e2 and write e0, e1, e2;
// latent 3 reads e3 and writes (2 e0 + e3)/sqrt 5: on the absorbed a-words the
// "starts with a" latent is silent and latent 3 carries the letter.
struct PlantedAbsorption {
  std::vector<FirstLetterWord> words;
  torch::Tensor activations;
  std::vector<bool> absorbed;
};

PlantedAbsorption Planted() {
  PlantedAbsorption planted;
  torch::manual_seed(5);
  std::vector<torch::Tensor> rows;
  for (int letter = 0; letter < 3; ++letter) {
    for (int i = 0; i < 120; ++i) {
      planted.words.push_back(
          {i, absl::StrCat(std::string(1, 'a' + letter), "word", i), letter});
      torch::Tensor y = torch::zeros({8});
      y[letter] = 1;
      const bool absorbed = letter == 0 && i % 4 == 0;
      if ((letter > 0 && i % 2 == 0) || absorbed) y[3] = 1;
      planted.absorbed.push_back(absorbed);
      rows.push_back(y + 0.02 * torch::randn({8}));
    }
  }
  planted.activations = torch::stack(rows);
  return planted;
}

ProbedFit PlantedSae() {
  layers::ReplacementOptions options;
  options.d_in = options.d_out = 8;
  options.d_ffn = 4;
  options.sparsity = config::FfnReplacement::RELU_L1;
  auto sae = std::make_shared<layers::SaeImpl>(options);
  torch::NoGradGuard no_grad;
  sae->output_bias.zero_();
  sae->encoder_bias.zero_();
  sae->encoder.zero_();  // (d, units)
  sae->decoder.zero_();  // (units, d)
  sae->encoder[0][0] = 1;
  sae->encoder[3][0] = -2;
  sae->encoder[1][1] = 1;
  sae->encoder[2][2] = 1;
  sae->encoder[3][3] = 1;
  for (int u = 0; u < 3; ++u) sae->decoder[u][u] = 1;
  sae->decoder[3][0] = 2 / std::sqrt(5.0);
  sae->decoder[3][3] = 1 / std::sqrt(5.0);
  ProbedFit fit{"planted.pt", "planted_relu_sae", {}, sae};
  fit.spec.set_ffn("relu_sae");
  fit.spec.set_layer(1);
  fit.spec.set_on_output(true);
  fit.spec.set_sparsity_penalty(0.01);
  return fit;
}

std::vector<std::vector<std::string>> Rows(const std::string& csv) {
  std::vector<std::vector<std::string>> rows;
  for (absl::string_view line : absl::StrSplit(csv, '\n', absl::SkipEmpty())) {
    rows.push_back(absl::StrSplit(line, ','));
  }
  return rows;
}

double Number(const std::string& text) {
  double value = 0;
  EXPECT_TRUE(absl::SimpleAtod(text, &value)) << text;
  return value;
}

// The value of `name` in row `row` of a CSV.
std::string Cell(const std::vector<std::vector<std::string>>& rows, size_t row,
                 const std::string& name) {
  for (size_t c = 0; c < rows[0].size(); ++c) {
    if (rows[0][c] == name) return rows[row][c];
  }
  ADD_FAILURE() << "no column " << name;
  return "";
}

TEST(AbsorptionOfActivationsTest, MeasuresThePlantedAbsorption) {
  const PlantedAbsorption planted = Planted();
  AbsorptionOptions options;
  options.seed = 2;
  options.base_name = "toy";
  options.min_letters = 3;
  auto tables = AbsorptionOfActivations(planted.words, planted.activations,
                                        {PlantedSae()}, options);
  ASSERT_TRUE(tables.ok()) << tables.status();
  // Expected: a's share of absorbed words among its test words (the probe
  // calls every test word right on these separable letters).
  int a_test = 0, a_absorbed = 0;
  for (size_t i = 0; i < planted.words.size(); ++i) {
    if (planted.words[i].letter != 0 ||
        SplitPartOf(2, planted.words[i].word) != SplitPart::kTest) {
      continue;
    }
    ++a_test;
    a_absorbed += planted.absorbed[i];
  }
  ASSERT_GT(a_absorbed, 0);
  const auto letters = Rows(tables->letters);
  ASSERT_EQ(letters.size(), 4u);  // Header, a, b, c.
  const double expected = static_cast<double>(a_absorbed) / a_test;
  EXPECT_EQ(Cell(letters, 1, "letter"), "a");
  EXPECT_EQ(Cell(letters, 1, "main_latents"), "1");
  EXPECT_EQ(Number(Cell(letters, 1, "probe_true_positives")), a_test);
  EXPECT_NEAR(Number(Cell(letters, 1, "mean_absorption_fraction")), expected,
              1e-9);
  EXPECT_NEAR(Number(Cell(letters, 1, "full_absorption_rate")), expected, 1e-9);
  for (size_t l = 2; l <= 3; ++l) {
    EXPECT_EQ(Number(Cell(letters, l, "mean_absorption_fraction")), 0);
    EXPECT_GT(Number(Cell(letters, l, "probe_f1")), 0.99);
    EXPECT_EQ(Cell(letters, l, "probe_ok"), "1");
  }
  const auto summary = Rows(tables->summary);
  ASSERT_EQ(summary.size(), 2u);
  EXPECT_EQ(Cell(summary, 1, "base"), "toy");
  EXPECT_EQ(Cell(summary, 1, "seed"), "2");
  EXPECT_EQ(Cell(summary, 1, "method"), "relu_sae");
  EXPECT_EQ(Cell(summary, 1, "sparsity_penalty"), "0.01");
  EXPECT_EQ(Cell(summary, 1, "letters_probe_ok"), "3");
  EXPECT_EQ(Cell(summary, 1, "letters_evaluated"), "3");
  EXPECT_NEAR(Number(Cell(summary, 1, "mean_absorption_fraction")),
              expected / 3, 1e-6);
  EXPECT_EQ(Cell(summary, 1, "measured"), "1");
  // The control: a probe of shuffled letters is far weaker (chance F1 for
  // three balanced letters is about 1/3).
  EXPECT_GT(Number(Cell(summary, 1, "probe_f1")), 0.99);
  EXPECT_LT(Number(Cell(summary, 1, "shuffled_probe_f1")), 0.6);
  EXPECT_NEAR(Number(Cell(summary, 1, "probe_f1_gain")),
              Number(Cell(summary, 1, "probe_f1")) -
                  Number(Cell(summary, 1, "shuffled_probe_f1")),
              1e-5);

  // Below the gate (four letters needed, three probed): no means.
  options.min_letters = 4;
  auto gated = AbsorptionOfActivations(planted.words, planted.activations,
                                       {PlantedSae()}, options);
  ASSERT_TRUE(gated.ok()) << gated.status();
  const auto gated_summary = Rows(gated->summary);
  EXPECT_EQ(Cell(gated_summary, 1, "measured"), "0");
  EXPECT_EQ(Cell(gated_summary, 1, "mean_absorption_fraction"), "nan");
  EXPECT_EQ(gated->letters, tables->letters);
}

TEST(AbsorptionOfActivationsTest, RejectsLayersThatAreNotOutputSaes) {
  const PlantedAbsorption planted = Planted();
  layers::ReplacementOptions options;
  options.d_in = options.d_out = 8;
  options.d_ffn = 4;
  options.top_k = 2;
  ProbedFit transcoder{"tc.pt", "tc_k2", {}, nullptr};
  transcoder.spec.set_ffn("transcoder");
  transcoder.layer = std::make_shared<layers::TranscoderImpl>(options, false);
  const auto status = AbsorptionOfActivations(
      planted.words, planted.activations, {transcoder}, AbsorptionOptions());
  EXPECT_EQ(status.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.status().message().find("tc.pt is a transcoder"),
            std::string::npos);
}

TEST(FirstLetterWordsTest, SingleTokenAlphabeticWordsWithTheirPrompts) {
  auto tokenizer = datasets::LoadTestBpe();
  const std::vector<FirstLetterWord> words = FirstLetterWords(*tokenizer, 40);
  ASSERT_EQ(words.size(), 40u);
  for (const FirstLetterWord& word : words) {
    EXPECT_EQ(tokenizer->WordOfPiece(word.id), word.word);
    EXPECT_EQ(tokenizer->EncodeWord(word.word), std::vector<int>{word.id});
    EXPECT_EQ(word.letter, std::tolower(word.word[0]) - 'a');
    EXPECT_GE(word.word.size(), 2u);
  }
  const std::vector<int> prompt = FirstLetterPrompt(*tokenizer, words, 7, 3);
  EXPECT_EQ(prompt.front(), tokenizer->bos_id() >= 0 ? tokenizer->bos_id()
                                                     : tokenizer->eos_id());
  EXPECT_EQ(prompt.back(), words[7].id);
  const std::string text =
      tokenizer->Decode(std::vector<int>(prompt.begin() + 1, prompt.end() - 1));
  // Three example lines of three different other words.
  std::set<std::string> examples;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    const std::vector<std::string> parts =
        absl::StrSplit(line, " has the first letter: ");
    ASSERT_EQ(parts.size(), 2u) << line;
    const std::string word(absl::StripAsciiWhitespace(parts[0]));
    EXPECT_NE(word, words[7].word);
    EXPECT_EQ(parts[1], std::string(1, std::toupper(word[0])));
    examples.insert(word);
  }
  EXPECT_EQ(examples.size(), 3u);
}

// The batch's right padding leaves each prompt's last position as it is
// alone.
TEST(FirstLetterActivationsTest, EachWordAsItsOwnPromptAlone) {
  auto tokenizer = datasets::LoadTestBpe();
  const std::vector<FirstLetterWord> words = FirstLetterWords(*tokenizer, 40);
  layers::GptOptions gpt =
      layers::testing::TinyGptOptions(tokenizer->vocab_size(), 16, 2);
  gpt.d_ffn = 64;
  torch::manual_seed(0);
  auto model = layers::GptImpl::Create(gpt);
  ASSERT_TRUE(model.ok()) << model.status();
  (*model)->eval();
  // One example: prompts of different lengths below the context (padded);
  // four: longer than the context of 16 (cut from the left).
  for (const int examples : {1, 4}) {
    const torch::Tensor batched =
        FirstLetterActivations(**model, *tokenizer, words, 1, examples);
    ASSERT_EQ(batched.size(0), 40);
    std::vector<torch::Tensor> ys;
    (*model)->FindHook("blocks.1.ffn.hook_out")->Add(layers::CaptureHook(&ys));
    torch::NoGradGuard no_grad;
    for (size_t i : {0, 17, 33, 39}) {
      std::vector<int> ids = FirstLetterPrompt(*tokenizer, words, i, examples);
      if (static_cast<int64_t>(ids.size()) > gpt.context_length) {
        ids.erase(ids.begin(), ids.end() - gpt.context_length);
      }
      ys.clear();
      (*model)->Hidden(
          torch::tensor(std::vector<int64_t>(ids.begin(), ids.end()))
              .unsqueeze(0));
      EXPECT_TRUE(
          torch::allclose(ys.at(0)[0][ids.size() - 1], batched[i], 1e-5, 1e-5))
          << i << " " << examples;
    }
    (*model)->ClearHooks();
  }
}

}  // namespace
}  // namespace sparse_layers::analysis
