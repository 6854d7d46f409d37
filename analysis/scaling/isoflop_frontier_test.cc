#include "analysis/scaling/isoflop_frontier.h"

#include <cmath>

#include "analysis/claims/tidy_table.h"
#include "gtest/gtest.h"

namespace sparse_layers::analysis {
namespace {

using claims::TidyTable;

constexpr char kRuns[] =
    "arm,seed,ffn,budget,parameters,forward_flops_per_token,validation_loss,"
    "validation_perplexity\n"
    "moe_budget0_size0,1,gpt_oss_moe,1e+09,300,100,4.0,54.6\n"
    "moe_budget0_size1,1,gpt_oss_moe,1e+09,600,150,3.5,33.1\n"
    "moe_budget0_size2,1,gpt_oss_moe,1e+09,900,200,3.8,44.7\n"
    "sgatlin_budget0_size0,1,sgatlin,1e+09,1200,100,3.9,49.4\n"
    "moe_budget0_size0,2,gpt_oss_moe,1e+09,300,100,3.4,30.0\n"
    "moe_budget1_size0,1,gpt_oss_moe,5e+08,300,100,4.5,90.0\n";

TEST(IsoflopFrontierTest, AddsComputeSparsitySortedByBudget) {
  auto runs = TidyTable::Parse(kRuns, "runs.csv");
  ASSERT_TRUE(runs.ok()) << runs.status();
  auto tables = IsoflopFrontier(*runs, 4.0);
  ASSERT_TRUE(tables.ok()) << tables.status();
  auto out = TidyTable::Parse(tables->runs, "isoflop.csv");
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->rows().size(), 6u);
  const int sparsity = *out->Column("compute_sparsity");
  // The smaller budget first; 300 parameters / (3 x 100 FLOPs) = 1.
  EXPECT_EQ(out->rows()[0][0], "moe_budget1_size0");
  EXPECT_EQ(out->rows()[0][sparsity], "1");
  // 600 / (3 x 150) = 1.33333.
  EXPECT_EQ(out->rows()[3][0], "moe_budget0_size1");
  EXPECT_EQ(out->rows()[3][sparsity], "1.33333");
}

TEST(IsoflopFrontierTest, BestSizePerFfnBudgetAndSeed) {
  auto runs = TidyTable::Parse(kRuns, "runs.csv");
  ASSERT_TRUE(runs.ok()) << runs.status();
  auto tables = IsoflopFrontier(*runs, 4.0);
  ASSERT_TRUE(tables.ok()) << tables.status();
  auto frontier = TidyTable::Parse(tables->frontier, "frontier.csv");
  ASSERT_TRUE(frontier.ok()) << frontier.status();
  // (5e8, moe, 1), (1e9, moe, 1), (1e9, moe, 2), (1e9, sgatlin, 1).
  ASSERT_EQ(frontier->rows().size(), 4u);
  const std::vector<std::string>& moe = frontier->rows()[1];
  EXPECT_EQ(moe[*frontier->Column("ffn")], "gpt_oss_moe");
  EXPECT_EQ(moe[*frontier->Column("budget")], "1e+09");
  EXPECT_EQ(moe[*frontier->Column("seed")], "1");
  EXPECT_EQ(moe[*frontier->Column("sizes")], "3");
  EXPECT_EQ(moe[*frontier->Column("best_size_rank")], "1");
  EXPECT_EQ(moe[*frontier->Column("best_arm")], "moe_budget0_size1");
  EXPECT_EQ(moe[*frontier->Column("best_parameters")], "600");
  EXPECT_EQ(moe[*frontier->Column("best_validation_loss")], "3.5");
  EXPECT_EQ(frontier->rows()[2][*frontier->Column("best_arm")],
            "moe_budget0_size0");
  EXPECT_EQ(frontier->rows()[2][*frontier->Column("sizes")], "1");
  // The unigram control's loss on every row, for the claims' b_metric.
  EXPECT_EQ(moe[*frontier->Column("unigram_validation_loss")], "4");
  EXPECT_FALSE(IsoflopFrontier(*runs, std::nan("")).ok());
}

TEST(IsoflopFrontierTest, MissingColumnOrNumberIsAnError) {
  auto no_seed = TidyTable::Parse(
      "arm,ffn,budget,parameters,forward_flops_per_token,validation_loss,"
      "validation_perplexity\na,b,1,1,1,1,1\n",
      "runs.csv");
  ASSERT_TRUE(no_seed.ok());
  EXPECT_FALSE(IsoflopFrontier(*no_seed, 4.0).ok());
  auto nan_loss = TidyTable::Parse(
      "arm,seed,ffn,budget,parameters,forward_flops_per_token,"
      "validation_loss,validation_perplexity\na,1,b,1,1,1,nan,1\n",
      "runs.csv");
  ASSERT_TRUE(nan_loss.ok());
  EXPECT_FALSE(IsoflopFrontier(*nan_loss, 4.0).ok());
}

}  // namespace
}  // namespace sparse_layers::analysis
