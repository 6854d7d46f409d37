#include "pipelines/train/lr_schedule.h"

#include <cmath>

#include "gtest/gtest.h"

namespace sparse_layers::train {
namespace {

config::ScheduleConfig Schedule(config::ScheduleConfig::Decay decay) {
  config::ScheduleConfig schedule;
  schedule.set_warmup_steps(10);
  schedule.set_decay(decay);
  schedule.set_min_lr_ratio(0.1);
  return schedule;
}

TEST(LearningRateTest, WarmupIsLinearToThePeak) {
  const auto schedule = Schedule(config::ScheduleConfig::CONSTANT);
  EXPECT_DOUBLE_EQ(LearningRate(schedule, 1.0, 0, 100), 0.1);
  EXPECT_DOUBLE_EQ(LearningRate(schedule, 1.0, 4, 100), 0.5);
  EXPECT_DOUBLE_EQ(LearningRate(schedule, 1.0, 9, 100), 1.0);
  EXPECT_DOUBLE_EQ(LearningRate(schedule, 1.0, 99, 100), 1.0);
}

TEST(LearningRateTest, CosineGoesFromPeakToTheFloor) {
  const auto schedule = Schedule(config::ScheduleConfig::COSINE);
  EXPECT_DOUBLE_EQ(LearningRate(schedule, 2.0, 10, 101), 2.0);
  // Half-way: floor + (1 - floor) / 2.
  EXPECT_NEAR(LearningRate(schedule, 2.0, 55, 101), 2.0 * 0.55, 1e-12);
  EXPECT_NEAR(LearningRate(schedule, 2.0, 100, 101), 0.2, 1e-12);
}

TEST(LearningRateTest, InverseSqrtDecaysAsOneOverRootStep) {
  const auto schedule = Schedule(config::ScheduleConfig::INVERSE_SQRT);
  EXPECT_DOUBLE_EQ(LearningRate(schedule, 1.0, 9, 1000), 1.0);
  EXPECT_NEAR(LearningRate(schedule, 1.0, 39, 1000), std::sqrt(10.0 / 40.0),
              1e-12);
  EXPECT_NEAR(LearningRate(schedule, 1.0, 999, 1000), std::sqrt(10.0 / 1000.0),
              1e-12);
}

// sgatlin's schedule (arXiv:2606.07414 App. B.1.1): 100 steps, decay 0.2 ->
// stable to step 79, then 1 - sqrt(t' / 20) for t' = step - 80.
TEST(LearningRateTest, WarmupStableSqrtDecayCoolsDownOverTheLastFifth) {
  const auto schedule = Schedule(config::ScheduleConfig::WSD_SQRT);
  EXPECT_DOUBLE_EQ(LearningRate(schedule, 1.0, 79, 100), 1.0);
  EXPECT_DOUBLE_EQ(LearningRate(schedule, 1.0, 80, 100), 1.0);
  EXPECT_NEAR(LearningRate(schedule, 1.0, 85, 100), 1 - std::sqrt(0.25), 1e-12);
  EXPECT_NEAR(LearningRate(schedule, 1.0, 99, 100), 1 - std::sqrt(0.95), 1e-12);
}

}  // namespace
}  // namespace sparse_layers::train
