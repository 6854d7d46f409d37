// training_curves: the trainer's loss logs (<run>.csv, lm_checkpoint's log) as
// one tidy CSV of loss over training, for the claims engine's figures (MoHD
// Fig. 8's perplexity during pretraining, MoE-X Fig. 10's loss). The curve is
// the training loss of each batch before its update, averaged over equal bins
// of steps: in a single pass over the data every batch is unseen when scored,
// so it estimates held-out loss at every step without extra evaluations.
#ifndef SPARSE_LAYERS_PIPELINES_TRAIN_TRAINING_CURVES_H_
#define SPARSE_LAYERS_PIPELINES_TRAIN_TRAINING_CURVES_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace sparse_layers::train {

// One log: the run's name ("dense_s2": arm and seed) and the log's text
// (step,tokens,learning_rate,train_loss,grad_norm,validation_loss).
struct TrainingLog {
  std::string run;
  std::string text;
};

// arm,seed,step,tokens,train_loss,train_perplexity for LM logs, or
// arm,seed,step,rows,train_nmse for a fit's (the log's own unit and train_*
// objective): `points` rows per log (logs in the given order), each the mean
// objective over one of `points` equal bins of its steps, at the bin's last
// step. Errors: a run name without a _s<seed> suffix, a log without the
// columns or with fewer steps than points, logs of different columns, a loss
// that is not a finite number.
absl::StatusOr<std::string> TrainingCurvesCsv(
    const std::vector<TrainingLog>& logs, int points);

}  // namespace sparse_layers::train

#endif  // SPARSE_LAYERS_PIPELINES_TRAIN_TRAINING_CURVES_H_
