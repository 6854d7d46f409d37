#include "analysis/routing/router_domains.h"

#include <torch/torch.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "layers/mohd/mohd.h"
#include "models/gpt.h"
#include "models/tiny_gpt.h"

namespace sparse_layers::analysis {
namespace {

TEST(JensenShannonBitsTest, ZeroForEqualOneForDisjointAndTheTextbookValue) {
  const torch::Tensor p = torch::tensor({1.0, 0.0}, torch::kDouble);
  const torch::Tensor q = torch::tensor({0.0, 1.0}, torch::kDouble);
  const torch::Tensor u = torch::tensor({0.5, 0.5}, torch::kDouble);
  EXPECT_DOUBLE_EQ(JensenShannonBits(u, u), 0.0);
  EXPECT_NEAR(JensenShannonBits(p, q), 1.0, 1e-12);
  // 0.5 log2(4/3) + 0.5 (0.5 log2(2/3) + 0.5 log2 2), m = (3/4, 1/4).
  EXPECT_NEAR(JensenShannonBits(p, u), 0.311278124459, 1e-9);
  EXPECT_NEAR(JensenShannonBits(u, p), JensenShannonBits(p, u), 1e-15);
}

TEST(DomainSpecialisationTest, BetweenOverHalfPairingsWithinOverDomains) {
  const torch::Tensor a = torch::tensor({1.0, 0.0}, torch::kDouble);
  const torch::Tensor b = torch::tensor({0.0, 1.0}, torch::kDouble);
  const torch::Tensor u = torch::tensor({0.5, 0.5}, torch::kDouble);
  // Halves equal within each domain, domains disjoint.
  Specialisation js = DomainSpecialisation({{a, a}, {b, b}});
  EXPECT_DOUBLE_EQ(js.within, 0.0);
  EXPECT_NEAR(js.between, 1.0, 1e-12);
  // Domain 1's halves differ: within is the mean of 0.311 and 0; between
  // averages JS(a, b) = 1, JS(a, b) = 1, JS(u, b) = 0.311, JS(u, b) = 0.311.
  js = DomainSpecialisation({{a, u}, {b, b}});
  EXPECT_NEAR(js.within, 0.311278124459 / 2, 1e-9);
  EXPECT_NEAR(js.between, (2 + 2 * 0.311278124459) / 4, 1e-9);
}

std::shared_ptr<layers::GptImpl> TinyMohd() {
  config::ModelConfig model = layers::testing::TinyModelConfig(3, 16, 2);
  model.set_ffn("mohd_swiglu");
  model.set_attention("mohd");
  model.set_n_experts(4);
  model.set_top_k(2);
  model.mutable_layer_options()->set_mohd_shared(1);
  absl::StatusOr<layers::GptOptions> options =
      layers::GptOptionsFromConfig(model);
  EXPECT_TRUE(options.ok()) << options.status();
  torch::manual_seed(0);
  absl::StatusOr<std::shared_ptr<layers::GptImpl>> gpt =
      layers::GptImpl::Create(*options);
  EXPECT_TRUE(gpt.ok()) << gpt.status();
  return *gpt;
}

std::vector<datasets::DomainTokens> TwoDomains() {
  std::vector<datasets::DomainTokens> domains(2);
  domains[0].domain = "x";
  domains[1].domain = "y";
  for (int h = 0; h < 2; ++h) {
    domains[0].halves[h] = std::vector<int>(64, 0);
    domains[1].halves[h] = std::vector<int>(64, 1);
    for (size_t i = 0; i < 64; i += 5) domains[1].halves[h][i] = h == 0 ? 2 : 0;
  }
  return domains;
}

std::vector<std::vector<std::string>> Rows(const std::string& csv) {
  std::vector<std::vector<std::string>> rows;
  for (absl::string_view line : absl::StrSplit(csv, '\n', absl::SkipEmpty())) {
    rows.push_back(absl::StrSplit(line, ','));
  }
  return rows;
}

TEST(RouterDomainTablesTest, EveryRouterDomainAndSubDimWithSharesOfAWhole) {
  auto model = TinyMohd();
  RouterDomainTables tables;
  RouterDomainOptions options;
  options.sequence_length = 8;
  ASSERT_TRUE(tables.AddModel("mohd", 3, *model, TwoDomains(), options).ok());
  const auto domains = Rows(tables.domains_csv());
  // 2 blocks x (attention, ffn) x 2 domains x 3 specialised sub-dims.
  ASSERT_EQ(domains.size(), 1u + 2 * 2 * 2 * 3);
  EXPECT_EQ(domains[1][0], "3");
  EXPECT_EQ(domains[1][2], "b0_attention");
  EXPECT_EQ(domains[1][6], "1");  // Sub-dims after the shared one.
  // 16 windows of 8 tokens per domain, position 0 left out of each.
  EXPECT_EQ(domains[1][9], "112");
  double probability = 0, share = 0;
  for (int i = 1; i <= 3; ++i) {
    probability += std::stod(domains[i][7]);
    share += std::stod(domains[i][8]);
  }
  EXPECT_NEAR(probability, 1.0, 1e-5);
  EXPECT_NEAR(share, 1.0, 1e-5);
  const auto specialisation = Rows(tables.specialisation_csv());
  ASSERT_EQ(specialisation.size(), 1u + 4);
  EXPECT_EQ(specialisation[4][2], "b1_ffn");
  EXPECT_EQ(specialisation[4][5], "2");
  EXPECT_EQ(specialisation[4][6], "224");
}

TEST(RouterDomainTablesTest,
     AZeroRouterRoutesEveryTokenAlikeSoNoDomainDiffers) {
  auto model = TinyMohd();
  {
    torch::NoGradGuard no_grad;
    for (auto& block : model->blocks) {
      std::dynamic_pointer_cast<layers::MohdAttentionImpl>(block->attention)
          ->gate->router.zero_();
      std::dynamic_pointer_cast<layers::MohdFfnImpl>(block->ffn)
          ->gate->router.zero_();
    }
  }
  RouterDomainTables tables;
  RouterDomainOptions options;
  options.sequence_length = 8;
  ASSERT_TRUE(tables.AddModel("mohd", 1, *model, TwoDomains(), options).ok());
  for (const auto& row : Rows(tables.domains_csv())) {
    if (row[0] == "seed") continue;
    EXPECT_NEAR(std::stod(row[7]), 1.0 / 3, 1e-6);  // Uniform probability.
  }
  for (const auto& row : Rows(tables.specialisation_csv())) {
    if (row[0] == "seed") continue;
    EXPECT_DOUBLE_EQ(std::stod(row[7]), 0.0);   // js_between
    EXPECT_DOUBLE_EQ(std::stod(row[8]), 0.0);   // js_within
    EXPECT_DOUBLE_EQ(std::stod(row[10]), 0.0);  // min_share: two unused
    EXPECT_DOUBLE_EQ(std::stod(row[11]), 1.0);  // max_share: one takes all
  }
}

TEST(RouterDomainTablesTest, AModelWithoutRoutersIsAnError) {
  auto dense =
      layers::GptImpl::Create(layers::testing::TinyGptOptions(3, 16, 1));
  ASSERT_TRUE(dense.ok());
  RouterDomainTables tables;
  const absl::Status status =
      tables.AddModel("dense", 1, **dense, TwoDomains(), {});
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("dense has no routed MoHD"),
            std::string::npos);
}

TEST(RouterDomainTablesTest, OneDomainAddsNoRows) {
  auto model = TinyMohd();
  RouterDomainTables tables;
  std::vector<datasets::DomainTokens> one = TwoDomains();
  one.pop_back();
  ASSERT_TRUE(tables.AddModel("mohd", 1, *model, one, {}).ok());
  EXPECT_EQ(Rows(tables.domains_csv()).size(), 1u);  // The header.
  EXPECT_EQ(Rows(tables.specialisation_csv()).size(), 1u);
}

}  // namespace
}  // namespace sparse_layers::analysis
