// The language-model objective: mean next-token cross-entropy plus the FFNs'
// auxiliary losses on windows of token shards; validation is the mean
// cross-entropy on the validation shards, and the summary carries a sample.
#ifndef SPARSE_LAYERS_PIPELINES_TRAIN_NEXT_TOKEN_OBJECTIVE_H_
#define SPARSE_LAYERS_PIPELINES_TRAIN_NEXT_TOKEN_OBJECTIVE_H_

#include <memory>

#include "absl/status/statusor.h"
#include "config/experiment.pb.h"
#include "models/gpt.h"
#include "pipelines/train/trainer.h"
#include "pipelines/train/training_loop.h"

namespace sparse_layers::train {

// Trains every parameter of `model`, on options' token manifests (or the
// config's data section); starts from options.init_from when set.
absl::StatusOr<std::unique_ptr<TrainingObjective>> MakeNextTokenObjective(
    const config::ExperimentConfig& config, const TrainerOptions& options,
    layers::GptImpl& model);

}  // namespace sparse_layers::train

#endif  // SPARSE_LAYERS_PIPELINES_TRAIN_NEXT_TOKEN_OBJECTIVE_H_
