// Learning-rate schedules: linear warm-up, then constant, cosine (Loshchilov
// & Hutter 2017), inverse square root (Vaswani et al. 2017) or
// warm-up-stable-decay with a square-root cool-down (sgatlin's).
#ifndef SPARSE_LAYERS_PIPELINES_TRAIN_LR_SCHEDULE_H_
#define SPARSE_LAYERS_PIPELINES_TRAIN_LR_SCHEDULE_H_

#include <cstdint>

#include "config/experiment.pb.h"

namespace sparse_layers::train {

// Learning rate of optimiser step `step` (0-based) of `total_steps`.
double LearningRate(const config::ScheduleConfig& schedule, double peak,
                    int64_t step, int64_t total_steps);

}  // namespace sparse_layers::train

#endif  // SPARSE_LAYERS_PIPELINES_TRAIN_LR_SCHEDULE_H_
