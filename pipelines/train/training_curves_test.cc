#include "pipelines/train/training_curves.h"

#include "gtest/gtest.h"

namespace sparse_layers::train {
namespace {

constexpr char kLog[] =
    "step,tokens,learning_rate,train_loss,grad_norm,validation_loss\n"
    "1,128,5.000000e-04,6.0,0.752104,\n"
    "2,256,1.000000e-03,5.0,0.758420,\n"
    "3,384,1.000000e-03,4.5,0.765084,\n"
    "4,512,9.923379e-04,4.0,0.778810,\n"
    "5,640,9.923379e-04,3.5,0.778810,3.9\n";

TEST(TrainingCurvesTest, MeansOverEqualBinsWithArmAndSeed) {
  auto csv = TrainingCurvesCsv({{"mohd_x2_s12", kLog}}, 2);
  ASSERT_TRUE(csv.ok()) << csv.status();
  // Bins of steps 1-2 (mean 5.5) and 3-5 (mean 4.0); exp(5.5) = 244.692,
  // exp(4) = 54.5982.
  EXPECT_EQ(*csv,
            "arm,seed,step,tokens,train_loss,train_perplexity\n"
            "mohd_x2,12,2,256,5.5,244.692\n"
            "mohd_x2,12,5,640,4,54.5982\n");
}

TEST(TrainingCurvesTest, AFitsLogKeepsItsRowsAndObjective) {
  auto csv = TrainingCurvesCsv(
      {{"gelu_mxd_k8_s1",
        "step,rows,learning_rate,train_nmse,grad_norm,validation_nmse\n"
        "1,256,2.5e-04,0.5,0.1,\n2,512,5e-04,0.3,0.1,0.2\n"}},
      1);
  ASSERT_TRUE(csv.ok()) << csv.status();
  EXPECT_EQ(*csv,
            "arm,seed,step,rows,train_nmse\n"
            "gelu_mxd_k8,1,2,512,0.4\n");
  // An LM's log and a fit's do not share a table.
  EXPECT_FALSE(TrainingCurvesCsv(
                   {{"dense_s1", kLog},
                    {"gelu_mxd_k8_s1", "step,rows,train_nmse\n1,256,0.5\n"}},
                   1)
                   .ok());
}

TEST(TrainingCurvesTest, RefusesWhatIsNotACurve) {
  EXPECT_FALSE(TrainingCurvesCsv({{"dense", kLog}}, 2).ok());
  EXPECT_FALSE(TrainingCurvesCsv({{"dense_s1", "step,tokens\n1,2\n"}}, 1).ok());
  EXPECT_FALSE(TrainingCurvesCsv({{"dense_s1", kLog}}, 6).ok());
  EXPECT_FALSE(TrainingCurvesCsv({{"dense_s1", kLog}}, 0).ok());
  const auto nan = TrainingCurvesCsv(
      {{"dense_s1", "step,tokens,train_loss\n1,128,nan\n"}}, 1);
  ASSERT_FALSE(nan.ok());
  EXPECT_EQ(nan.status().message(),
            "dense_s1: line 2: training loss 'nan' is not a finite number");
}

}  // namespace
}  // namespace sparse_layers::train
