#include "pipelines/train/lr_schedule.h"

#include <algorithm>
#include <cmath>

namespace sparse_layers::train {

double LearningRate(const config::ScheduleConfig& schedule, double peak,
                    int64_t step, int64_t total_steps) {
  const int64_t warmup = schedule.warmup_steps();
  if (step < warmup) return peak * static_cast<double>(step + 1) / warmup;
  switch (schedule.decay()) {
    case config::ScheduleConfig::COSINE: {
      const double span = std::max<int64_t>(1, total_steps - 1 - warmup);
      const double progress = std::min(1.0, (step - warmup) / span);
      const double floor = schedule.min_lr_ratio();
      return peak *
             (floor + (1 - floor) * 0.5 * (1 + std::cos(M_PI * progress)));
    }
    case config::ScheduleConfig::INVERSE_SQRT:
      // Continuous at the end of warm-up: peak * sqrt(warmup / step).
      return peak *
             std::sqrt(static_cast<double>(std::max<int64_t>(warmup, 1)) /
                       (step + 1));
    case config::ScheduleConfig::WSD_SQRT: {
      // Stable, then 1 - sqrt(t' / decay) over the last decay_fraction of the
      // steps (sgatlin's warmup_stable_sqrt_decay, arXiv:2606.07414
      // App. B.1.1).
      const double fraction =
          schedule.decay_fraction() > 0 ? schedule.decay_fraction() : 0.2;
      const int64_t decay = static_cast<int64_t>(fraction * total_steps);
      const int64_t into_decay = step - (total_steps - decay);
      if (decay <= 0 || into_decay < 0) return peak;
      return peak * (1 - std::sqrt(static_cast<double>(into_decay) / decay));
    }
    default:
      return peak;
  }
}

}  // namespace sparse_layers::train
