// A language model built from an experiment config: randomly initialised from
// its runtime.seed, or trained and back from its checkpoint (the config stored
// inside it builds the model, then the parameters are restored). Links the LM
// families only: a checkpoint with a replacement layer loads where
// layers/replacement is linked too (model_loader.h), so the LM trainer's
// identity, and every cached LM, does not change with a replacement layer.
#ifndef SPARSE_LAYERS_MODELS_LM_LOADER_H_
#define SPARSE_LAYERS_MODELS_LM_LOADER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "config/experiment.pb.h"
#include "models/gpt.h"

namespace sparse_layers::layers {

// The model of `config`, its parameters drawn after torch::manual_seed of
// config.runtime().seed(): a training run's start, and the untrained control
// of the same config (the same draws). In training mode.
absl::StatusOr<std::shared_ptr<GptImpl>> InitializeModel(
    const config::ExperimentConfig& config);

struct LoadedModel {
  config::ExperimentConfig config;
  std::shared_ptr<layers::GptImpl> model;  // In eval mode.
};

absl::StatusOr<LoadedModel> LoadModel(const std::string& checkpoint_path);

}  // namespace sparse_layers::layers

#endif  // SPARSE_LAYERS_MODELS_LM_LOADER_H_
