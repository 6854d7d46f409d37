#include "analysis/replacement/frontier_gap.h"

#include <cmath>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sparse_layers::analysis {
namespace {

using ::testing::HasSubstr;

claims::TidyTable Table(const std::string& rows) {
  auto table = claims::TidyTable::Parse(
      "base,name,method,k,sparsity,sparsity_penalty,seed,training,l0,ce,"
      "nmse\n" +
          rows,
      "frontier.csv");
  EXPECT_TRUE(table.ok()) << table.status();
  return *table;
}

// TopK fits at L0 2, 16 and 32 (CE 3.0, 2.4, 2.2); a ReLU + L1 fit at L0 4 sits
// a third of the way in log L0 from 2 to 16, so TopK's CE there is 2.8.
TEST(FrontierGapTest, InterpolatesTheTopKFrontierInLogL0) {
  const claims::TidyTable frontier = Table(
      "gelu,k2,mxd_gelu,2,topk,,1,default,2,3.0,0.30\n"
      "gelu,k16,mxd_gelu,16,topk,,1,default,16,2.4,0.18\n"
      "gelu,k32,mxd_gelu,32,topk,,1,default,32,2.2,0.10\n"
      "gelu,rk8,mxd_gelu,8,topk,,1,random_k,4,9.9,9.9\n"
      "gelu,l1a,mxd_gelu,0,relu_l1,0.001,1,default,4,2.9,0.27\n"
      "gelu,l1b,mxd_gelu,0,relu_l1,0.0001,1,default,64,2.0,0.05\n"
      "gelu,k2,mxd_gelu,2,topk,,2,default,2,1.2,0.5\n"
      "gelu,k8,mxd_gelu,8,topk,,2,default,8,1.0,0.3\n"
      "gelu,l1a,mxd_gelu,0,relu_l1,0.001,2,default,8,1.5,0.4\n"
      "gelu,l1b,mxd_gelu,0,relu_l1,0.0001,2,default,4,1.1,0.4\n"
      "gelu,l1r,mxd_gelu,0,relu_l1,0.001,1,random_k,4,9.9,9.9\n");
  std::vector<std::string> outside;
  const auto csv = FrontierGap(frontier, &outside);
  ASSERT_TRUE(csv.ok()) << csv.status();
  EXPECT_EQ(*csv,
            "base,name,method,k,sparsity,sparsity_penalty,seed,l0,compared,ce,"
            "topk_ce_at_l0,nmse,topk_nmse_at_l0\n"
            "gelu,l1a,mxd_gelu,0,relu_l1,0.001,1,4,1,2.900000,2.800000,"
            "0.270000,0.260000\n"
            "gelu,l1b,mxd_gelu,0,relu_l1,0.0001,1,64,0,2.000000,,0.050000,\n"
            "gelu,l1a,mxd_gelu,0,relu_l1,0.001,2,8,1,1.500000,1.000000,"
            "0.400000,0.300000\n"
            "gelu,l1b,mxd_gelu,0,relu_l1,0.0001,2,4,0,1.100000,1.100000,"
            "0.400000,0.400000\n");
  // L0 64 is beyond seed 1's TopK fits' 32: no comparison, named, and its
  // penalty's seed-2 fit (inside) is not compared either.
  EXPECT_EQ(outside, std::vector<std::string>{"l1b"});
}

// The SAE names fix their rule, so their frontier is topk_sae's; BatchTopK's
// levels are its K: K = 32's fit (L0 40, beyond the frontier) leaves out
// that K alone, not K = 4.
TEST(FrontierGapTest, SaeRulesArePlacedAgainstTheTopKSae) {
  const claims::TidyTable frontier = Table(
      "gelu,t2,topk_sae,2,topk,,1,default,2,3.0,0.30\n"
      "gelu,t32,topk_sae,32,topk,,1,default,32,2.0,0.10\n"
      "gelu,b4,batch_topk_sae,4,batch_topk,,1,default,8,2.4,0.2\n"
      "gelu,b32,batch_topk_sae,32,batch_topk,,1,default,40,1.9,0.1\n"
      "gelu,j,jump_relu_sae,0,jump_relu,0.01,1,default,4,2.6,0.25\n");
  std::vector<std::string> outside;
  const auto csv = FrontierGap(frontier, &outside);
  ASSERT_TRUE(csv.ok()) << csv.status();
  EXPECT_EQ(*csv,
            "base,name,method,k,sparsity,sparsity_penalty,seed,l0,compared,ce,"
            "topk_ce_at_l0,nmse,topk_nmse_at_l0\n"
            "gelu,b4,batch_topk_sae,4,batch_topk,,1,8,1,2.400000,2.500000,"
            "0.200000,0.200000\n"
            "gelu,b32,batch_topk_sae,32,batch_topk,,1,40,0,1.900000,,0.100000,"
            "\n"
            "gelu,j,jump_relu_sae,0,jump_relu,0.01,1,4,1,2.600000,2.750000,"
            "0.250000,0.250000\n");
  EXPECT_EQ(outside, std::vector<std::string>{"b32"});
}

TEST(FrontierGapTest, AFitWithoutATopKFrontierIsAnError) {
  const auto csv =
      FrontierGap(Table("gelu,k2,mxd_gelu,2,topk,,1,default,2,3,0.3\n"
                        "gelu,l1,mxd_gelu,0,relu_l1,0.1,2,default,"
                        "4,2.9,0.27\n"),
                  nullptr);
  ASSERT_FALSE(csv.ok());
  EXPECT_THAT(csv.status().message(),
              HasSubstr("fewer than two TopK mxd_gelu fits of base gelu and "
                        "seed 2"));
  const auto bad = FrontierGap(Table("gelu,k2,mxd_gelu,2,topk,,1,default,nan,3,"
                                     "0.3\n"),
                               nullptr);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("k2 l0"));
}

}  // namespace
}  // namespace sparse_layers::analysis
