// Fitting a replacement layer on an activation cache (pipelines/activations):
// only model.replacement's layer trains, every other parameter comes from
// --init_from, so the checkpoint is the base model with the layer spliced in
// and every LM tool (CE, sampling, hooks) reads it as is. Two objectives:
// - a sparse FFN replacement (Transcoder, Skip Transcoder, MxD, TopK SAE)
//   reproducing a frozen FFN from cached (input, output) rows with the
//   normalised MSE (MxD, arXiv:2505.21364 Sec. 3.1, and its released code:
//   AdamW, warm-up then constant, output bias at the targets' mean, decoder
//   rows at unit norm); data.batch_size counts rows;
// - a Lorsa reproducing a frozen attention layer from whole windows of an
//   attention cache (Lorsa, arXiv:2504.20938 Sec. 3.1: squared error, here
//   divided by the batch's variance, i.e. the batch FVU, so the learning rate
//   does not depend on the activations' scale); data.batch_size counts
//   windows.
#ifndef SPARSE_LAYERS_PIPELINES_TRAIN_REPLACEMENT_OBJECTIVES_H_
#define SPARSE_LAYERS_PIPELINES_TRAIN_REPLACEMENT_OBJECTIVES_H_

#include <memory>

#include "absl/status/statusor.h"
#include "config/experiment.pb.h"
#include "models/gpt.h"
#include "pipelines/train/trainer.h"
#include "pipelines/train/training_loop.h"

namespace sparse_layers::train {

// The objective of model.replacement's layer on options.train_activations
// (validated on options.validation_activations, else the training cache);
// fails unless both caches were made from options.init_from at that layer.
absl::StatusOr<std::unique_ptr<TrainingObjective>> MakeReplacementObjective(
    const config::ExperimentConfig& config, const TrainerOptions& options,
    layers::GptImpl& model);

}  // namespace sparse_layers::train

#endif  // SPARSE_LAYERS_PIPELINES_TRAIN_REPLACEMENT_OBJECTIVES_H_
