// A trained model back from its checkpoint: the config stored inside it builds
// the model (replacement layers included), then the parameters are restored.
#ifndef SPARSE_LAYERS_LAYERS_MODELS_MODEL_LOADER_H_
#define SPARSE_LAYERS_LAYERS_MODELS_MODEL_LOADER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "layers/models/gpt.h"
#include "layers/replacement/sparse_replacement.h"
#include "tools/config/experiment.pb.h"

namespace sparse_layers::layers {

struct LoadedModel {
  config::ExperimentConfig config;
  std::shared_ptr<layers::GptImpl> model;  // In eval mode.
};

absl::StatusOr<LoadedModel> LoadModel(const std::string& checkpoint_path);

// A fitted replacement checkpoint (the trainer's fitting mode): the model,
// its config's model.replacement and the sparse layer spliced in.
struct LoadedReplacement {
  LoadedModel loaded;
  config::FfnReplacement spec;
  std::shared_ptr<layers::SparseReplacementImpl> layer;
};

absl::StatusOr<LoadedReplacement> LoadReplacement(
    const std::string& checkpoint_path);

// OK when `fit` was fitted on `base`: a fit freezes its base model, so every
// tensor both name must be equal; else an error naming the first that is not,
// and both checkpoints.
absl::Status CheckFittedOn(const LoadedReplacement& fit,
                           const std::string& fit_path, const LoadedModel& base,
                           const std::string& base_path);

}  // namespace sparse_layers::layers

#endif  // SPARSE_LAYERS_LAYERS_MODELS_MODEL_LOADER_H_
