// A model built from an experiment config: randomly initialised from its
// runtime.seed, or trained and back from its checkpoint (the config stored
// inside it builds the model, replacement layers included, then the parameters
// are restored).
#ifndef SPARSE_LAYERS_LAYERS_MODELS_MODEL_LOADER_H_
#define SPARSE_LAYERS_LAYERS_MODELS_MODEL_LOADER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "layers/models/gpt.h"
#include "layers/replacement/sparse_replacement.h"
#include "tools/config/experiment.pb.h"

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

// A fitted replacement checkpoint (the trainer's fitting mode): its path
// (named in errors), the model, its config's model.replacement and the sparse
// layer spliced in.
struct LoadedReplacement {
  std::string path;
  LoadedModel loaded;
  config::FfnReplacement spec;
  // Null only for a Lorsa, which stands in for the attention itself
  // (GptImpl::LorsaReplacement).
  std::shared_ptr<layers::SparseReplacementImpl> layer;
};

// The fits an analysis takes.
enum class FitKind {
  kSparseLayer,    // A sparse layer (transcoders, SAEs, MxD) at any site.
  kAttentionSite,  // A Lorsa or an SAE on the attention output.
};

// Fails with the path when the checkpoint is not of `kind`.
absl::StatusOr<LoadedReplacement> LoadReplacement(
    const std::string& checkpoint_path, FitKind kind = FitKind::kSparseLayer);

// The fits at `paths`, in order, each loaded by LoadReplacement; the first
// that fails fails them all.
absl::StatusOr<std::vector<LoadedReplacement>> LoadReplacements(
    const std::vector<std::string>& paths,
    FitKind kind = FitKind::kSparseLayer);

// OK when `fit` was fitted on `base`: a fit freezes its base model, so every
// tensor both name must be equal; else an error naming the first that is not,
// and both checkpoints.
absl::Status CheckFittedOn(const LoadedReplacement& fit,
                           const LoadedModel& base,
                           const std::string& base_path);

}  // namespace sparse_layers::layers

#endif  // SPARSE_LAYERS_LAYERS_MODELS_MODEL_LOADER_H_
