// The one training loop and the objectives it runs. The loop owns the
// schedule, the optimizer step and clipping, the CSV log, progress lines,
// periodic checkpoints, the resume check and the run's outputs; an objective
// owns its data, its loss and its part of the summary. Objectives:
// next-token cross-entropy (next_token_objective.h) and fitting a replacement
// layer (an FFN replacement or a Lorsa) on cached activations
// (replacement_objectives.h).
#ifndef SPARSE_LAYERS_PIPELINES_TRAIN_TRAINING_LOOP_H_
#define SPARSE_LAYERS_PIPELINES_TRAIN_TRAINING_LOOP_H_

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "config/experiment.pb.h"
#include "pipelines/train/trainer.h"
#include "pipelines/train/training.pb.h"

namespace sparse_layers::train {

class TrainingObjective {
 public:
  virtual ~TrainingObjective() = default;

  // What a step consumes ("tokens", "rows") and what its loss is ("loss",
  // "nmse"): the log's columns and the progress line.
  virtual absl::string_view unit() const = 0;
  virtual absl::string_view loss_name() const = 0;
  virtual int64_t units_per_step() const = 0;
  // Matrix-multiply FLOPs of one unit's forward pass (what max_flops counts).
  virtual int64_t forward_flops_per_unit() const = 0;
  // The serialised manifest of the training data (train_data_sha256).
  virtual std::string train_data_manifest() const = 0;

  // The parameters the optimizer updates; the rest of the model is frozen.
  virtual std::vector<torch::Tensor> TrainableParameters() = 0;
  // A fresh run's start (not called when resuming): the parent's weights,
  // initial biases.
  virtual absl::Status Initialize() = 0;
  // Sets the train / eval mode of the model's modules before the first step.
  virtual void StartTraining() = 0;
  // The loss of step `step`: a function of (seed, step) only, so a resumed
  // run replays what an uninterrupted one would have done.
  virtual torch::Tensor Loss(int64_t step) = 0;
  // Between backward and the optimizer step.
  virtual void AdjustGradients() = 0;
  // The validation loss (the log's last column).
  virtual double Validate() = 0;
  // After the last step, before the final validation.
  virtual void FinishTraining() {}
  // The objective's summary fields (objective, parameters, its validation
  // metrics beyond the loss, a sample).
  virtual absl::Status Summarize(TrainingSummary& summary) = 0;
};

// Trains `objective`'s parameters of `model` within config.budget, resuming
// from options.checkpoint_path when options.resume and it exists, and writes
// the checkpoint, log and summary where `options` asks.
absl::StatusOr<TrainingSummary> RunTrainingLoop(
    const config::ExperimentConfig& config, const TrainerOptions& options,
    torch::nn::Module& model, TrainingObjective& objective);

}  // namespace sparse_layers::train

#endif  // SPARSE_LAYERS_PIPELINES_TRAIN_TRAINING_LOOP_H_
