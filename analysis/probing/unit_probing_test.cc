#include "analysis/probing/unit_probing.h"

#include <torch/torch.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/common/file_io.h"
#include "datasets/text/test_bpe.h"
#include "gtest/gtest.h"
#include "models/tiny_gpt.h"
#include "ops/backend/allocation_counter.h"
#include "ops/hooks/hook_point.h"

namespace sparse_layers::analysis {
namespace {

// A random 3-block GELU model (d_model 16, FFN width 64 = 4 d_model).
std::shared_ptr<layers::GptImpl> TinyModel(int64_t vocab_size) {
  layers::GptOptions options =
      layers::testing::TinyGptOptions(vocab_size, 16, 3);
  options.d_ffn = 64;
  torch::manual_seed(0);
  auto model = layers::GptImpl::Create(options);
  EXPECT_TRUE(model.ok()) << model.status();
  (*model)->eval();
  return *model;
}

// A Transcoder of width 24 on the FFN input and a TopK SAE of width 100 on
// its output, both at `block`.
std::vector<ProbedFit> TinyFits(int block) {
  layers::ReplacementOptions options;
  options.d_in = options.d_out = 16;
  options.top_k = 4;
  options.d_ffn = 24;
  ProbedFit tc{"tc.pt", "tc_k4", {}, nullptr};
  tc.spec.set_ffn("transcoder");
  tc.spec.set_layer(block);
  tc.layer = std::make_shared<layers::TranscoderImpl>(options, false);
  options.d_ffn = 100;
  ProbedFit sae{"sae.pt", "sae_k4", {}, nullptr};
  sae.spec.set_ffn("topk_sae");
  sae.spec.set_layer(block);
  sae.spec.set_on_output(true);
  sae.layer = std::make_shared<layers::SaeImpl>(options);
  return {tc, sae};
}

std::string Json(const std::string& text, const std::string& label,
                 const std::string& more = "") {
  return absl::StrCat(R"({"text": ")", text, R"(", "label": ")", label, "\"",
                      more, "}\n");
}

// The block is the fits' (or 2/3 of the depth); methods are the neurons, the
// fits in order and the random control, as wide as the widest layer.
TEST(ProbedBlockOfTest, FitsBlockAndARandomControlAsWideAsTheWidestLayer) {
  auto tok = datasets::LoadTestBpe();
  auto model = TinyModel(tok->vocab_size());
  UnitProbingOptions options;
  options.seed = 7;
  auto probed = ProbedBlockOf(*model, TinyFits(1), options);
  ASSERT_TRUE(probed.ok()) << probed.status();
  EXPECT_EQ(probed->block, 1);
  std::vector<std::string> names;
  for (const ProbeMethod& method : probed->methods) {
    names.push_back(method.name + "/" + method.layer_kind);
  }
  EXPECT_EQ(names, std::vector<std::string>(
                       {"mlp_neurons/mlp_neurons", "tc_k4/transcoder",
                        "sae_k4/topk_sae", "random/random"}));
  EXPECT_TRUE(probed->methods[2].on_output);
  // The SAE's 100 units, drawn from the seed.
  torch::manual_seed(7);
  EXPECT_TRUE(torch::equal(probed->random_directions, torch::randn({16, 100})));

  // Without fits: 2/3 of the depth and the MLP's width (4 d_model).
  auto alone = ProbedBlockOf(*model, {}, options);
  ASSERT_TRUE(alone.ok()) << alone.status();
  EXPECT_EQ(alone->block, 2);
  EXPECT_EQ(alone->methods.size(), 2u);
  EXPECT_EQ(alone->random_directions.sizes(), torch::IntArrayRef({16, 64}));

  options.layer = 0;
  const auto other = ProbedBlockOf(*model, TinyFits(1), options);
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.status().message(), "tc.pt replaces block 1, not 0");
  options.layer = 3;
  EXPECT_FALSE(ProbedBlockOf(*model, {}, options).ok());
}

// The split is a function of (seed, group): 20% test, 20% validation, 60% fit
// of the groups; another seed resamples it.
TEST(SplitPartOfTest, DeterministicAndEightyTwentyOverGroups) {
  std::map<SplitPart, int> counts;
  int moved = 0;
  for (int g = 0; g < 2000; ++g) {
    const std::string group = absl::StrCat("group", g);
    const SplitPart part = SplitPartOf(1, group);
    EXPECT_EQ(SplitPartOf(1, group), part);
    ++counts[part];
    moved += SplitPartOf(2, group) != part;
  }
  EXPECT_NEAR(counts[SplitPart::kTest], 400, 60);
  EXPECT_NEAR(counts[SplitPart::kValidation], 400, 60);
  EXPECT_NEAR(counts[SplitPart::kFit], 1200, 80);
  EXPECT_GT(moved, 600);
}

// A document is cut to its first max_tokens tokens and mean-pooled; a
// token-level example ("pool": "last") is cut to its last ones and read at
// its last token; a text of fewer than 5 tokens is dropped. Compared with the
// units computed by hand from the block's captured FFN input and output.
TEST(PoolUnitsTest, DocumentsMeanPoolAndTokenExamplesReadTheLastToken) {
  auto tok = datasets::LoadTestBpe();
  auto model = TinyModel(tok->vocab_size());
  UnitProbingOptions options;
  options.max_tokens = 6;
  options.seed = 3;
  auto probed = ProbedBlockOf(*model, TinyFits(1), options);
  ASSERT_TRUE(probed.ok()) << probed.status();
  const std::string document =
      "the old man walked along the river to the town before the rain came";
  const std::string example =
      "she said that the ship would leave the harbour at dawn";
  const std::string jsonl = Json(document, "news", R"(, "group": "g1")") +
                            Json("a b", "news") +
                            Json(example, "verb", R"(, "pool": "last")");
  auto pooled = PoolUnits(*model, *tok, *probed, jsonl, options);
  ASSERT_TRUE(pooled.ok()) << pooled.status();
  EXPECT_TRUE(pooled->token_level);
  EXPECT_EQ(pooled->labels, std::vector<std::string>({"news", "verb"}));
  EXPECT_EQ(pooled->parts, std::vector<SplitPart>({SplitPartOf(3, "g1"),
                                                   SplitPartOf(3, example)}));
  EXPECT_FALSE(model->FindHook("blocks.1.ffn.hook_in")->active());

  std::vector<torch::Tensor> xs, ys, hidden;
  model->FindHook("blocks.1.ffn.hook_in")->Add(layers::CaptureHook(&xs));
  model->FindHook("blocks.1.ffn.hook_out")->Add(layers::CaptureHook(&ys));
  model->FindHook("blocks.1.ffn.hook_hidden")
      ->Add(layers::CaptureHook(&hidden));
  torch::NoGradGuard no_grad;
  for (int text = 0; text < 2; ++text) {
    std::vector<int> ids = tok->Encode(text == 0 ? document : example);
    ASSERT_GT(ids.size(), 6u);
    ids = text == 0 ? std::vector<int>(ids.begin(), ids.begin() + 6)
                    : std::vector<int>(ids.end() - 6, ids.end());
    xs.clear();
    ys.clear();
    hidden.clear();
    model->Hidden(torch::tensor(std::vector<int64_t>(ids.begin(), ids.end()))
                      .view({1, -1}));
    const torch::Tensor x = xs.at(0)[0], y = ys.at(0)[0];
    const std::vector<torch::Tensor> units = {
        hidden.at(0)[0], probed->methods[1].layer->PreCodes(x),
        probed->methods[2].layer->PreCodes(y),
        x.matmul(probed->random_directions)};
    for (size_t m = 0; m < units.size(); ++m) {
      ASSERT_EQ(units[m].size(0), 6);
      const torch::Tensor mean = units[m].sum(0) / 6;
      const torch::Tensor last = units[m][5];
      ASSERT_FALSE(torch::allclose(mean, last, 1e-4, 1e-4)) << m;
      const torch::Tensor got = pooled->features[m][text];
      EXPECT_TRUE(torch::allclose(got, text == 0 ? mean : last, 1e-5, 1e-6))
          << "method " << m << ", text " << text;
    }
  }
  EXPECT_EQ(pooled->features[0].sizes(), torch::IntArrayRef({2, 64}));
  EXPECT_EQ(pooled->features[3].sizes(), torch::IntArrayRef({2, 100}));
}

// Texts of different lengths pooled in one padded batch get the rows each
// gets alone: the padding is neither attended to nor pooled.
TEST(PoolUnitsTest, PaddedBatchesPoolEachTextAsAlone) {
  auto tok = datasets::LoadTestBpe();
  auto model = TinyModel(tok->vocab_size());
  UnitProbingOptions options;
  options.max_tokens = 32;
  auto probed = ProbedBlockOf(*model, TinyFits(1), options);
  ASSERT_TRUE(probed.ok()) << probed.status();
  const std::vector<std::string> lines = {
      Json("the old man walked along the river to the town before the rain "
           "came and the ship would leave",
           "a"),
      Json("the old ship", "b"),
      Json("she came at dawn", "a", R"(, "pool": "last")")};
  // Three lengths within the context: the two short ones are padded.
  ASSERT_GE(tok->Encode("the old ship").size(), 5u);
  ASSERT_LT(tok->Encode("the old ship").size(),
            tok->Encode("she came at dawn").size());
  ASSERT_LT(tok->Encode("she came at dawn").size(), 16u);
  auto together =
      PoolUnits(*model, *tok, *probed, lines[0] + lines[1] + lines[2], options);
  ASSERT_TRUE(together.ok()) << together.status();
  ASSERT_EQ(together->labels.size(), 3u);
  for (int text = 0; text < 3; ++text) {
    auto alone = PoolUnits(*model, *tok, *probed, lines[text], options);
    ASSERT_TRUE(alone.ok()) << alone.status();
    for (size_t m = 0; m < probed->methods.size(); ++m) {
      EXPECT_TRUE(torch::allclose(together->features[m][text],
                                  alone->features[m][0], 1e-5, 1e-6))
          << "method " << m << ", text " << text;
    }
  }
}

// Pooling keeps one row per text and method, not the text's (T, units): the
// memory it adds for more token-level texts is about their rows' bytes.
TEST(PoolUnitsTest, KeepsOnlyThePooledRows) {
  auto tok = datasets::LoadTestBpe();
  auto model = TinyModel(tok->vocab_size());
  UnitProbingOptions options;
  options.max_tokens = 32;
  auto probed = ProbedBlockOf(*model, TinyFits(1), options);
  ASSERT_TRUE(probed.ok()) << probed.status();
  const std::string text =
      "the old man walked along the river to the town before the rain came "
      "and the ship would leave the harbour at dawn with the letters";
  ASSERT_GE(tok->Encode(text).size(), 32u);
  const auto texts = [&](int n) {
    std::string jsonl;
    for (int i = 0; i < n; ++i) {
      jsonl += Json(text, i % 2 ? "a" : "b",
                    absl::StrCat(R"(, "pool": "last", "group": "g)", i, "\""));
    }
    return jsonl;
  };
  // Once uncounted, so that the model's caches are made before the count.
  ASSERT_TRUE(PoolUnits(*model, *tok, *probed, texts(2), options).ok());
  backend::ScopedAllocationCounter counter;
  // The peak bytes PoolUnits adds, and its features' bytes, over n texts.
  const auto measure = [&](int n) {
    const std::string jsonl = texts(n);
    counter.ResetPeak();
    auto pooled = PoolUnits(*model, *tok, *probed, jsonl, options);
    EXPECT_TRUE(pooled.ok()) << pooled.status();
    int64_t feature_bytes = 0;
    for (const torch::Tensor& f : pooled->features) feature_bytes += f.nbytes();
    return std::make_pair(counter.PeakExtraBytes(), feature_bytes);
  };
  const auto [peak_small, features_small] = measure(50);
  const auto [peak_large, features_large] = measure(150);
  // Views would add 32 rows per text and method (about 32x the features).
  EXPECT_LT(peak_large - peak_small, 4 * (features_large - features_small))
      << peak_small << " -> " << peak_large << " bytes";
}

// One row per class and method (a task of one class has none), every text of
// a group on the same side of the split.
TEST(ProbeUnitsTest, RowPerClassAndMethodWithGroupsKeptTogether) {
  auto tok = datasets::LoadTestBpe();
  auto model = TinyModel(tok->vocab_size());
  const std::vector<std::string> words = {
      "river",  "market", "engine", "garden", "letter",
      "winter", "castle", "doctor", "window", "silver"};
  const std::vector<std::string> labels = {"fiction", "news", "science"};
  std::string genre, single;
  std::set<std::string> test_groups;
  int test_texts = 0;
  for (int i = 0; i < 60; ++i) {
    const std::string group = absl::StrCat("g", i / 3);
    const std::string text =
        absl::StrCat("the ", words[i % 10], " and the ", words[(i * 7) % 10],
                     " were seen near the ", words[(i / 3) % 10]);
    genre += Json(text, labels[i % 3], R"(, "group": ")" + group + "\"");
    single += Json(text, "news");
    if (SplitPartOf(5, group) == SplitPart::kTest) {
      test_groups.insert(group);
      ++test_texts;
    }
  }
  ASSERT_GT(test_groups.size(), 1u);
  const std::string dir = std::getenv("TEST_TMPDIR");
  ASSERT_TRUE(WriteFileAtomically(dir + "/genre.jsonl", genre).ok());
  ASSERT_TRUE(WriteFileAtomically(dir + "/single.jsonl", single).ok());
  UnitProbingOptions options;
  options.data = {dir + "/genre.jsonl", dir + "/single.jsonl"};
  options.base_name = "tiny";
  options.candidates = 5;
  options.seed = 5;
  auto tables = ProbeUnits(*model, *tok, TinyFits(1), options);
  ASSERT_TRUE(tables.ok()) << tables.status();
  const std::vector<std::string> lines =
      absl::StrSplit(tables->probes, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 1u + 3 * 4);
  EXPECT_EQ(lines[0],
            "base,task,granularity,class,method,layer_kind,units,"
            "test_positives,test_texts,best_f1,best_balanced_accuracy,"
            "best_unit,selected_f1,selected_unit,seed");
  const std::map<std::string, std::string> units = {{"mlp_neurons", "64"},
                                                    {"tc_k4", "24"},
                                                    {"sae_k4", "100"},
                                                    {"random", "100"}};
  int positives = 0;
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::vector<std::string> f = absl::StrSplit(lines[i], ',');
    ASSERT_EQ(f.size(), 15u) << lines[i];
    EXPECT_EQ(f[0], "tiny");
    EXPECT_EQ(f[1], "genre");
    EXPECT_EQ(f[2], "document");
    EXPECT_EQ(f[6], units.at(f[4])) << lines[i];
    EXPECT_EQ(f[8], absl::StrCat(test_texts)) << lines[i];
    EXPECT_EQ(f[14], "5");
    if (f[4] == "random") positives += std::stoi(f[7]);
  }
  // The classes' test positives add up to the test texts.
  EXPECT_EQ(positives, test_texts);
  // Densities: 2 samples x kDensityBins bins per probe row, each sample's
  // shares of a (class, method) summing to 1, at the row's best unit.
  const std::vector<std::string> density_lines =
      absl::StrSplit(tables->densities, '\n', absl::SkipEmpty());
  ASSERT_EQ(density_lines.size(), 1u + 3 * 4 * 2 * kDensityBins);
  EXPECT_EQ(density_lines[0], absl::StripSuffix(kUnitDensitiesHeader, "\n"));
  std::map<std::string, double> sums;
  std::map<std::string, std::string> best_units;
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::vector<std::string> f = absl::StrSplit(lines[i], ',');
    best_units[f[3] + "," + f[4]] = f[11];
  }
  for (size_t i = 1; i < density_lines.size(); ++i) {
    const std::vector<std::string> f = absl::StrSplit(density_lines[i], ',');
    ASSERT_EQ(f.size(), 12u) << density_lines[i];
    EXPECT_EQ(f[6], best_units.at(f[3] + "," + f[4])) << density_lines[i];
    sums[f[3] + "," + f[4] + "," + f[8]] += std::stod(f[11]);
  }
  ASSERT_EQ(sums.size(), 3u * 4 * 2);
  for (const auto& [key, sum] : sums) EXPECT_NEAR(sum, 1.0, 1e-5) << key;
}

}  // namespace
}  // namespace sparse_layers::analysis
