#include "analysis/expert_geometry/expert_encoders.h"

#include <algorithm>
#include <memory>

#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "layers/ffn/mixture_of_experts.h"
#include "models/tiny_gpt.h"

namespace sparse_layers::analysis {
namespace {

std::shared_ptr<layers::GptImpl> TinyModel(const std::string& ffn) {
  torch::manual_seed(0);
  layers::GptOptions options = layers::testing::TinyGptOptions(20, 8, 2);
  options.ffn = ffn;
  if (ffn != "gelu_mlp") {
    options.n_experts = 4;
    options.top_k = 2;
    options.d_ffn = 12;
  }
  auto model = layers::GptImpl::Create(options);
  EXPECT_TRUE(model.ok()) << model.status();
  return *model;
}

TEST(ExpertEncodersTest, NeighbourShareCountsOwnLabelNeighbours) {
  // Ten points on a line labelled 0, 1, 0, 1, ...: each interior point's two
  // nearest are the other label; the two ends have one own-label neighbour.
  const torch::Tensor line = torch::arange(10, torch::kFloat64).unsqueeze(1);
  const torch::Tensor alternating = torch::arange(10, torch::kLong) % 2;
  EXPECT_NEAR(SameLabelNeighbourShare(line, alternating, 2), 0.1, 1e-12);
  const torch::Tensor halves = torch::arange(10, torch::kLong).floor_divide(5);
  // Halves: only points 4 and 5 reach across (one of two neighbours).
  EXPECT_NEAR(SameLabelNeighbourShare(line, halves, 2), 1 - 2 * 0.5 / 10,
              1e-12);
}

TEST(ExpertEncodersTest, ChanceShareIsTheSameLabelPairShare) {
  EXPECT_NEAR(ChanceNeighbourShare(torch::tensor({0, 0, 0, 1}, torch::kLong)),
              0.5, 1e-12);
  EXPECT_NEAR(
      ChanceNeighbourShare(torch::arange(8, torch::kLong).floor_divide(4)),
      3.0 / 7.0, 1e-12);
}

TEST(ExpertEncodersTest, RowsAreEachExpertsEncoderRows) {
  auto model = TinyModel("moe_x");
  auto rows = ExpertEncoderRows(*model, 1, 5);
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_EQ(rows->points.sizes(), (std::vector<int64_t>{4 * 5, 8}));
  const auto moe = std::dynamic_pointer_cast<layers::MixtureOfExpertsImpl>(
      model->blocks[1]->ffn);
  // Row 7 is expert 1's row 2.
  EXPECT_EQ(rows->experts[7].item<int64_t>(), 1);
  EXPECT_TRUE(torch::allclose(rows->points[7],
                              moe->encoders[1][2].to(torch::kFloat64)));
  auto all = ExpertEncoderRows(*model, 0, 0);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->points.size(0), 4 * 12);
  EXPECT_FALSE(ExpertEncoderRows(*model, 2, 5).ok());
  auto dense = TinyModel("gelu_mlp");
  auto refused = ExpertEncoderRows(*dense, 0, 5);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("not a mixture"),
            std::string::npos);
}

TEST(ExpertEncodersTest, ExpertsInOwnRegionsScoreAboveChanceRandomOnesDoNot) {
  auto model = TinyModel("switch");
  ExpertEncoderOptions options;
  options.model_name = "switch";
  options.seed = 4;
  options.rows_per_expert = 0;
  options.neighbours = 5;
  options.headline_layer = 1;
  options.map = true;
  options.tsne.perplexity = 8;
  options.tsne.iterations = 200;
  ExpertEncoderTables random_tables;
  ASSERT_TRUE(random_tables.AddModel(*model, options).ok());
  // Expert j's rows moved to their own corner of input space.
  {
    torch::NoGradGuard no_grad;
    for (auto& block : model->blocks) {
      auto moe =
          std::dynamic_pointer_cast<layers::MixtureOfExpertsImpl>(block->ffn);
      for (int j = 0; j < 4; ++j) moe->encoders[j].select(1, j).add_(10.0);
    }
  }
  options.model_name = "clustered";
  ExpertEncoderTables clustered_tables;
  ASSERT_TRUE(clustered_tables.AddModel(*model, options).ok());
  auto excess_of = [](const std::string& csv, int line) {
    std::vector<std::string> lines = absl::StrSplit(csv, '\n');
    std::vector<std::string> cells = absl::StrSplit(lines[line], ',');
    return std::stod(cells.back());
  };
  const std::string& random_csv = random_tables.neighbours();
  EXPECT_EQ(random_csv.substr(0, random_csv.find('\n')),
            "model,seed,layer,headline_block,experts,rows,neighbours,"
            "same_expert_share,chance_share,same_expert_excess");
  for (int block : {0, 1}) {
    EXPECT_LT(std::abs(excess_of(random_csv, 1 + block)), 0.25);
    EXPECT_NEAR(excess_of(clustered_tables.neighbours(), 1 + block),
                1 - 11.0 / 47.0, 1e-6);  // Printed to 6 places.
  }
  EXPECT_NE(random_csv.find("switch,4,1,1,4,48,5,"), std::string::npos);
  // The map: the headline block's 48 rows, one line each.
  const std::string& map = clustered_tables.map();
  EXPECT_EQ(std::count(map.begin(), map.end(), '\n'), 1 + 48);
  EXPECT_NE(map.find("\nclustered,4,1,3,11,"), std::string::npos);
  // Mapping each expert's first 5 rows: 20 points, expert 3's last is row 4.
  options.map_rows_per_expert = 5;
  ExpertEncoderTables subset;
  ASSERT_TRUE(subset.AddModel(*model, options).ok());
  EXPECT_EQ(std::count(subset.map().begin(), subset.map().end(), '\n'), 1 + 20);
  EXPECT_NE(subset.map().find("\nclustered,4,1,3,4,"), std::string::npos);
  EXPECT_EQ(subset.map().find("\nclustered,4,1,3,5,"), std::string::npos);
}

TEST(ExpertEncodersTest, ADenseModelHasNoExpertsToMap) {
  auto model = TinyModel("gelu_mlp");
  ExpertEncoderTables tables;
  ExpertEncoderOptions options;
  options.model_name = "gelu";
  const absl::Status status = tables.AddModel(*model, options);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("no mixture-of-experts block"),
            std::string::npos);
}

}  // namespace
}  // namespace sparse_layers::analysis
