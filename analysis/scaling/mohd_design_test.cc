#include "analysis/scaling/mohd_design.h"

#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"

namespace sparse_layers::analysis {
namespace {

config::ExperimentConfig Config(const std::string& model) {
  config::ExperimentConfig config;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(
      "model { " + model + " }", &config));
  return config;
}

// The smoke shapes of the MoHD study: d = 32, L = 2, q = 32, d_ff = 80.
constexpr char kDense[] =
    "d_model: 32 n_layers: 2 d_ffn: 80 attention_inner: 32";

TEST(MohdDesignTest, DenseActivatesEverything) {
  auto design = DesignOf("dense", Config(kDense));
  ASSERT_TRUE(design.ok()) << design.status();
  EXPECT_EQ(design->ffn_active_width, 32);
  // 2 x 32 x (4 x 32 + 3 x 80) = 64 x 368.
  EXPECT_EQ(design->activated_parameters, 23552);
  EXPECT_EQ(design->sub_dims, 0);
}

TEST(MohdDesignTest, CompressionAndExpansion) {
  // 50%: K = 4 of N = 8 at D = d activates half of dense.
  auto half =
      DesignOf("mohd_50", Config(std::string(kDense) +
                                 " attention: \"mohd\" ffn: \"mohd_swiglu\" "
                                 "n_experts: 8 top_k: 4 "
                                 "layer_options { mohd_shared: 3 }"));
  ASSERT_TRUE(half.ok()) << half.status();
  EXPECT_EQ(half->attention_active_width, 16);
  EXPECT_EQ(half->ffn_active_width, 16);
  EXPECT_EQ(half->activated_parameters, 23552 / 2);
  EXPECT_EQ(half->shared, 3);
  // x2: D = 2d with K = 4 of 8 activates exactly dense's count.
  auto x2 =
      DesignOf("mohd_x2", Config("d_model: 64 n_layers: 2 d_ffn: 80 "
                                 "attention_inner: 32 attention: \"mohd\" "
                                 "ffn: \"mohd_swiglu\" n_experts: 8 top_k: 4"));
  ASSERT_TRUE(x2.ok()) << x2.status();
  EXPECT_EQ(x2->ffn_active_width, 32);
  EXPECT_EQ(x2->activated_parameters, 23552);
}

TEST(MohdDesignTest, DecoupledSparsityCountsEachPart) {
  // Table 5: the FFN routed at 50%, the attention dense: 2 x (32 x 128 + 16 x
  // 240) = 15872; the attention alone: 2 x (16 x 128 + 32 x 240) = 19456.
  auto ffn = DesignOf("ffn_50", Config(std::string(kDense) +
                                       " ffn: \"mohd_swiglu\" n_experts: 8 "
                                       "top_k: 4"));
  ASSERT_TRUE(ffn.ok()) << ffn.status();
  EXPECT_EQ(ffn->attention_active_width, 32);
  EXPECT_EQ(ffn->ffn_active_width, 16);
  EXPECT_EQ(ffn->activated_parameters, 15872);
  auto attention = DesignOf(
      "attention_50", Config(std::string(kDense) +
                             " attention: \"mohd\" n_experts: 8 top_k: 4"));
  ASSERT_TRUE(attention.ok()) << attention.status();
  EXPECT_EQ(attention->activated_parameters, 19456);
}

TEST(MohdDesignTest, RefusesUndividedWidthAndMissingFfn) {
  auto odd = DesignOf(
      "odd", Config(std::string(kDense) + " attention: \"mohd\" n_experts: 7 "
                                          "top_k: 4"));
  EXPECT_FALSE(odd.ok());
  EXPECT_NE(std::string(odd.status().message())
                .find("odd: N = 7 does not divide K D = 4 x 32"),
            std::string::npos)
      << odd.status();
  EXPECT_FALSE(DesignOf("no_ffn", Config("d_model: 32 n_layers: 2")).ok());
}

TEST(MohdDesignTest, CsvHasOneRowPerVariant) {
  auto dense = DesignOf("dense", Config(kDense));
  ASSERT_TRUE(dense.ok());
  EXPECT_EQ(DesignCsv({*dense}),
            "variant,d_model,d_ffn,sub_dims,active,shared,attention_active_"
            "width,ffn_active_width,activated_parameters\n"
            "dense,32,80,0,0,0,32,32,23552\n");
}

}  // namespace
}  // namespace sparse_layers::analysis
