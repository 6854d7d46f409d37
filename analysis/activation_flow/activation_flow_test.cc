#include "analysis/activation_flow/activation_flow.h"

#include <torch/torch.h>

#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "datasets/text/test_token_split.h"
#include "gtest/gtest.h"
#include "models/tiny_gpt.h"

namespace sparse_layers::analysis {
namespace {

std::shared_ptr<layers::GptImpl> TinyModel() {
  torch::manual_seed(0);
  auto model =
      layers::GptImpl::Create(layers::testing::TinyGptOptions(50, 16, 2));
  EXPECT_TRUE(model.ok()) << model.status();
  (*model)->eval();
  return *model;
}

// The residual stream adds up across the captured sites (pre-norm blocks):
// resid_mid = resid_pre + attn_out, resid_post = resid_mid + ffn_out, and a
// block's resid_post is the next block's resid_pre; position 0 is dropped.
TEST(ActivationFlowTest, CapturedSitesAddUpAlongTheResidualStream) {
  auto model = TinyModel();
  const torch::Tensor tokens = torch::randint(50, {3, 12});
  auto captures = CaptureActivationSites(*model, tokens);
  ASSERT_TRUE(captures.ok()) << captures.status();
  ASSERT_EQ(captures->size(), 2u);
  const auto& sites = ActivationSites();
  auto at = [&](int block, const std::string& site) {
    for (size_t s = 0; s < sites.size(); ++s) {
      if (sites[s].first == site) return (*captures)[block][s];
    }
    ADD_FAILURE() << site;
    return torch::Tensor();
  };
  for (int b = 0; b < 2; ++b) {
    EXPECT_EQ(at(b, "resid_pre").sizes(), (std::vector<int64_t>{3, 11, 16}));
    EXPECT_EQ(at(b, "ffn_hidden").size(2), 32);
    EXPECT_TRUE(torch::allclose(at(b, "resid_mid"),
                                at(b, "resid_pre") + at(b, "attn_out"), 1e-5,
                                1e-6));
    EXPECT_TRUE(torch::allclose(at(b, "resid_post"),
                                at(b, "resid_mid") + at(b, "ffn_out"), 1e-5,
                                1e-6));
  }
  EXPECT_TRUE(torch::equal(at(0, "resid_post"), at(1, "resid_pre")));
}

std::vector<std::vector<std::string>> Rows(const std::string& csv) {
  std::vector<std::vector<std::string>> rows;
  for (absl::string_view line : absl::StrSplit(csv, '\n', absl::SkipEmpty())) {
    rows.push_back(absl::StrSplit(line, ','));
  }
  return rows;
}

double At(const std::vector<std::vector<std::string>>& rows, size_t row,
          const std::string& column) {
  for (size_t c = 0; c < rows[0].size(); ++c) {
    double value = 0;
    if (rows[0][c] == column && absl::SimpleAtod(rows[row][c], &value)) {
      return value;
    }
  }
  ADD_FAILURE() << column << " in row " << row;
  return 0;
}

TEST(ActivationFlowTest, TablesPerModelBlockAndSite) {
  auto model = TinyModel();
  auto split = datasets::RandomTokenSplit("split", "validation", 50, 1200, 3);
  ActivationFlowOptions options;
  options.windows = 6;
  options.sequence_length = 64;  // Capped at the context, 16.
  options.shuffled_windows = 50;
  ActivationFlowTables tables;
  ASSERT_TRUE(tables.AddModel("tiny", *model, *split, options).ok());
  const auto flow = Rows(tables.flow());
  ASSERT_EQ(flow.size(), 1u + 2 * 8);  // Header, 2 blocks x 8 sites.
  for (size_t row = 1; row < flow.size(); ++row) {
    EXPECT_EQ(flow[row][0], "tiny");
    const double top10 = At(flow, row, "share_top10"),
                 top25 = At(flow, row, "share_top25"),
                 top50 = At(flow, row, "share_top50");
    EXPECT_TRUE(0 < top10 && top10 <= top25 && top25 <= top50 && top50 <= 1)
        << row;
    if (flow[row][2] == "attn_in") {
      EXPECT_DOUBLE_EQ(At(flow, row, "energy_vs_attn_in"), 1.0);
    }
  }
  // Per block: q in {0.2, 0.5, 0.8, 0.9} x windows w = 2..6 (6 sequences).
  const auto sharing = Rows(tables.sharing());
  EXPECT_EQ(sharing.size(), 1u + 2 * 4 * 5);
  for (size_t row = 1; row < sharing.size(); ++row) {
    EXPECT_LE(At(sharing, row, "consecutive"),
              16 * (1 - At(sharing, row, "q")) + 1);
  }
}

}  // namespace
}  // namespace sparse_layers::analysis
