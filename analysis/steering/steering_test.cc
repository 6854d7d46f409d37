#include "analysis/steering/steering.h"

#include <torch/torch.h>

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "datasets/text/test_bpe.h"
#include "datasets/text/test_token_split.h"
#include "gtest/gtest.h"
#include "models/tiny_gpt.h"

namespace sparse_layers::analysis {
namespace {

// A random one-block GPT over the tokenizer's vocabulary, its weights x4: at
// the default init a steered unit hardly moves the predictions, and no CE
// budget binds. `transcoder` puts a 32-unit TopK transcoder in place of its
// FFN, as a fit does.
layers::LoadedModel TinyModel(int64_t vocab, bool transcoder,
                              uint64_t init_seed) {
  layers::GptOptions options = layers::testing::TinyGptOptions(vocab, 8, 1);
  if (transcoder) options.replacement = {"transcoder", 0, 32, 0, 4};
  torch::manual_seed(init_seed);
  layers::LoadedModel loaded;
  loaded.model = *layers::GptImpl::Create(options);
  loaded.model->eval();
  torch::NoGradGuard no_grad;
  for (torch::Tensor& p : loaded.model->parameters()) p.mul_(4);
  return loaded;
}

layers::LoadedReplacement Transcoder(int64_t vocab) {
  layers::LoadedReplacement fit;
  fit.path = "tc.pt";
  fit.loaded = TinyModel(vocab, true, 1);
  fit.loaded.config.set_name("tc_k4");
  fit.spec.set_ffn("transcoder");
  fit.spec.set_layer(0);
  return fit;
}

// The CSV's rows as column name -> value, header checked.
std::vector<std::map<std::string, std::string>> Rows(const std::string& csv) {
  const std::vector<std::string> lines =
      absl::StrSplit(csv, '\n', absl::SkipEmpty());
  const std::vector<std::string> header = absl::StrSplit(lines.at(0), ',');
  EXPECT_EQ(lines.at(0),
            "base,method,layer_kind,unit,alpha_scale,alpha,concept_steered,"
            "concept_unsteered,concept_strength,nll_steered,nll_unsteered,"
            "heldout_concept_gain,heldout_ce_increase,seed");
  std::vector<std::map<std::string, std::string>> rows;
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::vector<std::string> fields = absl::StrSplit(lines[i], ',');
    EXPECT_EQ(fields.size(), header.size()) << lines[i];
    auto& row = rows.emplace_back();
    for (size_t c = 0; c < header.size() && c < fields.size(); ++c) {
      row[header[c]] = fields[c];
    }
  }
  return rows;
}

TEST(ParseAlphaGridTest, PositiveNumbersUpToAMillion) {
  EXPECT_EQ(*ParseAlphaGrid("0.5,1,32"), (std::vector<double>{0.5, 1, 32}));
  for (const char* bad : {"", "1,0", "1,-2", "1,,2", "x", "2e6", "nan"}) {
    const auto grid = ParseAlphaGrid(bad);
    EXPECT_FALSE(grid.ok()) << bad;
  }
  EXPECT_NE(ParseAlphaGrid("1,-2").status().message().find("got '-2'"),
            std::string::npos);
}

// The tiny base model (seed 11), one transcoder fit and random tokens, steered
// at 3 units a layer with 2 samples of 6 tokens.
class SteerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tok_ = datasets::LoadTestBpe();
    ASSERT_NE(tok_, nullptr);
    base_ = TinyModel(tok_->vocab_size(), false, 11);
    // Enough for two eval batches of 8 windows.
    tokens_ = datasets::RandomTokenSplit(
        ::testing::UnitTest::GetInstance()->current_test_info()->name(), "test",
        tok_->vocab_size(), 2000, 2);
    fits_.push_back(Transcoder(tok_->vocab_size()));
    options_.base_name = "tiny";
    options_.reference_batches = 1;
    options_.sweep_batches = 1;
    options_.units = 3;
    options_.samples = 2;
    options_.new_tokens = 6;
    options_.calibration_units = 2;
    options_.seed = 7;
  }
  absl::StatusOr<SteeringTables> Run() const {
    return Steer("base.pt", base_, *tok_, *tokens_, fits_, options_);
  }

  std::unique_ptr<datasets::Tokenizer> tok_;
  layers::LoadedModel base_;
  std::unique_ptr<datasets::TokenShardSet> tokens_;
  std::vector<layers::LoadedReplacement> fits_;
  SteeringOptions options_;
};

// Without the dense baseline only the fits' units are steered, and each
// fit's rows are those of the run with the baseline (its draws do not depend
// on the baseline's).
TEST_F(SteerTest, WithoutTheDenseBaselineOnlyTheFitsRowsRemain) {
  const auto with_baseline = Run();
  ASSERT_TRUE(with_baseline.ok()) << with_baseline.status();
  options_.dense_baseline = false;
  const auto without = Run();
  ASSERT_TRUE(without.ok()) << without.status();
  const auto all_rows = Rows(with_baseline->csv);
  const auto fit_rows = Rows(without->csv);
  ASSERT_EQ(all_rows.size(), 6u);
  ASSERT_EQ(fit_rows.size(), 3u);
  for (size_t i = 0; i < fit_rows.size(); ++i) {
    EXPECT_EQ(fit_rows[i].at("layer_kind"), "transcoder");
    EXPECT_EQ(fit_rows[i], all_rows[3 + i]) << "unit " << i;
  }
}

// alpha 0 steers nothing: the steered samples are the unsteered ones (same
// seeds, same model), so every difference in the table is exactly 0.
TEST_F(SteerTest, ZeroAlphaLeavesEveryGenerationAsItWas) {
  options_.alpha_grid = {0};
  const auto tables = Run();
  ASSERT_TRUE(tables.ok()) << tables.status();

  const auto rows = Rows(tables->csv);
  ASSERT_EQ(rows.size(), 6u);  // 3 units of the base neurons, 3 of the fit.
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& row = rows[i];
    EXPECT_EQ(row.at("base"), "tiny");
    EXPECT_EQ(row.at("method"), i < 3 ? "tiny_mlp" : "tc_k4");
    EXPECT_EQ(row.at("layer_kind"), i < 3 ? "mlp_neurons" : "transcoder");
    EXPECT_EQ(row.at("seed"), "7");
    EXPECT_EQ(row.at("alpha_scale"), "0");
    EXPECT_EQ(row.at("alpha"), "0.0000");
    EXPECT_EQ(row.at("concept_steered"), row.at("concept_unsteered"));
    EXPECT_EQ(row.at("concept_strength"), "0.000000");
    EXPECT_EQ(row.at("nll_steered"), row.at("nll_unsteered"));
    // Held-out effects are differences of two forward passes: 0 to float
    // rounding.
    EXPECT_NEAR(std::stod(row.at("heldout_concept_gain")), 0, 1e-6);
    EXPECT_NEAR(std::stod(row.at("heldout_ce_increase")), 0, 1e-6);
  }
  // The base neurons' first example is the unsteered base sample.
  const std::vector<std::string> lines = absl::StrSplit(tables->examples, '\n');
  ASSERT_GT(lines.size(), 4u);
  EXPECT_EQ(lines[0], "# Steering examples (prompt \"Let's talk about \")");
  ASSERT_EQ(lines[2].substr(0, 16), "unsteered base: ");
  EXPECT_EQ(lines[4].substr(0, 26), "tiny_mlp alpha sweep over ");
  const size_t text = lines[5].find("; alpha 0.00): ");
  ASSERT_NE(text, std::string::npos) << lines[5];
  EXPECT_EQ(lines[5].substr(text + 15), lines[2].substr(16));
}

// The chosen scale is the largest held-out concept gain among the scales
// within the CE budget, the smallest scale when none is (MxD Sec. D.1 fixes
// alpha; we match the fluency cost instead).
TEST_F(SteerTest, ChosenAlphaScaleStaysWithinTheCeBudget) {
  options_.alpha_grid = {0.25, 1, 4, 16, 64};
  // Each layer's chosen scale (CSV column alpha_scale) at a CE budget.
  auto chosen = [&](double max_ce_increase) {
    options_.max_ce_increase = max_ce_increase;
    const auto tables = Run();
    EXPECT_TRUE(tables.ok()) << tables.status();
    std::map<std::string, std::set<std::string>> scales;
    for (const auto& row : Rows(tables->csv)) {
      scales[row.at("method")].insert(row.at("alpha_scale"));
    }
    return std::make_pair(tables->examples, scales);
  };
  using Scales = std::map<std::string, std::set<std::string>>;
  // The transcoder's sweep: concept gain rises with the scale, and from 4 on
  // so does the CE cost.
  const auto [examples, free] = chosen(1e6);
  EXPECT_TRUE(absl::StrContains(
      examples,
      "tc_k4 alpha sweep over 2 held-out units (scale: concept mass gain / CE "
      "increase): 0.25: +0.0009 mass / +-0.008 nats; 1: +0.0039 mass / "
      "+-0.023 nats; 4: +0.0096 mass / +0.005 nats; 16: +0.0117 mass / "
      "+0.034 nats; 64: +0.0120 mass / +0.043 nats; chosen 64\n"))
      << examples;
  EXPECT_EQ(free, (Scales{{"tiny_mlp", {"64"}}, {"tc_k4", {"64"}}}));
  // 0.02 nats: the transcoder's 16 and 64 cost too much, so 4; of the base
  // neurons' scales only 0.25 (0.013 nats) is within.
  EXPECT_EQ(chosen(0.02).second,
            (Scales{{"tiny_mlp", {"0.25"}}, {"tc_k4", {"4"}}}));
  // 1e-6 nats: the transcoder's 4 (0.005 nats) is out too, so 1; none of the
  // base neurons' scales is within, so the smallest.
  EXPECT_EQ(chosen(1e-6).second,
            (Scales{{"tiny_mlp", {"0.25"}}, {"tc_k4", {"1"}}}));
}

TEST_F(SteerTest, HooksMissingOrSilentAreErrorsNamingTheLayer) {
  fits_[0].spec.set_layer(3);
  auto steered = Run();
  ASSERT_FALSE(steered.ok());
  EXPECT_EQ(steered.status().message(),
            "base.pt: the base model has no block 3");

  fits_[0].spec.set_layer(0);
  fits_.push_back(Transcoder(tok_->vocab_size()));
  fits_[1].path = "other.pt";
  fits_[1].spec.set_layer(3);
  steered = Run();
  ASSERT_FALSE(steered.ok());
  EXPECT_EQ(steered.status().message(),
            "other.pt: its model has no code hook at block 3");

  // Every block has an SAE hook, but only an SAE fit calls it.
  fits_.pop_back();
  fits_[0].spec.set_on_output(true);
  steered = Run();
  ASSERT_FALSE(steered.ok());
  EXPECT_EQ(steered.status().message(),
            "tc_k4: blocks.0.ffn.sae.hook_codes saw no codes on the reference "
            "text");
  fits_.clear();
  EXPECT_FALSE(Run().ok());
}

}  // namespace
}  // namespace sparse_layers::analysis
