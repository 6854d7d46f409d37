#include "analysis/replacement/probing_vs_fidelity.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sparse_layers::analysis {
namespace {

using ::testing::HasSubstr;

claims::TidyTable Table(const std::string& text, const std::string& name) {
  auto table = claims::TidyTable::Parse(text, name);
  EXPECT_TRUE(table.ok()) << table.status();
  return *table;
}

const char kFrontier[] =
    "base,name,method,ce_recovered,nmse,l0\n"
    "gelu,tc_s1,transcoder,0.98,0.011,8.000\n"
    "gelu,sae_s1,topk_sae,0.99,0.009,8.000\n";

// tc_s1's document rows average (0.5 + 0.7 + 0.9) / 3 best, its token row
// stands alone; the base neurons and the random control are left out.
TEST(ProbingVsFidelityTest, MeanF1PerFitAndGranularityBesideItsFrontierRow) {
  const auto csv = ProbingVsFidelity(
      Table("base,task,granularity,class,method,layer_kind,best_f1,"
            "selected_f1,seed\n"
            "gelu,genre,document,a,tc_s1,transcoder,0.5,0.4,1\n"
            "gelu,genre,document,b,tc_s1,transcoder,0.7,0.5,1\n"
            "gelu,spam,document,spam,tc_s1,transcoder,0.9,0.6,1\n"
            "gelu,pos,token,noun,tc_s1,transcoder,0.8,0.2,1\n"
            "gelu,pos,token,noun,sae_s1,topk_sae,0.6,0.6,1\n"
            "gelu,pos,token,noun,mlp_neurons,mlp_neurons,0.1,0.1,1\n"
            "gelu,pos,token,noun,random,random,0.2,0.2,1\n",
            "probing.csv"),
      Table(kFrontier, "atlas.csv"));
  ASSERT_TRUE(csv.ok()) << csv.status();
  EXPECT_EQ(*csv,
            "base,name,layer_kind,seed,granularity,classes,best_f1,selected_f1,"
            "ce_recovered,nmse,l0\n"
            "gelu,sae_s1,topk_sae,1,token,1,0.600000,0.600000,0.99,0.009,"
            "8.000\n"
            "gelu,tc_s1,transcoder,1,document,3,0.700000,0.500000,0.98,0.011,"
            "8.000\n"
            "gelu,tc_s1,transcoder,1,token,1,0.800000,0.200000,0.98,0.011,"
            "8.000\n");
}

TEST(ProbingVsFidelityTest, AProbedFitWithoutItsFrontierRowIsAnError) {
  const auto csv = ProbingVsFidelity(
      Table("base,task,granularity,class,method,layer_kind,best_f1,"
            "selected_f1,seed\n"
            "gelu,pos,token,noun,mxd_s1,mxd_gelu,0.6,0.6,1\n",
            "probing.csv"),
      Table(kFrontier, "atlas.csv"));
  ASSERT_FALSE(csv.ok());
  EXPECT_THAT(csv.status().message(),
              HasSubstr("probed fit mxd_s1 has no row in atlas.csv"));
  const auto twice = ProbingVsFidelity(
      Table("base,task,granularity,class,method,layer_kind,best_f1,"
            "selected_f1,seed\n",
            "probing.csv"),
      Table(std::string(kFrontier) + "gelu,tc_s1,transcoder,0.9,0.1,8\n",
            "atlas.csv"));
  ASSERT_FALSE(twice.ok());
  EXPECT_THAT(twice.status().message(), HasSubstr("two rows for fit tc_s1"));
}

}  // namespace
}  // namespace sparse_layers::analysis
