// Models and fitted replacement layers back from their checkpoints:
// lm_loader.h with the replacement layers (layers/replacement) linked, so a
// checkpoint with a replacement layer spliced in loads too, and the fits.
#ifndef SPARSE_LAYERS_MODELS_MODEL_LOADER_H_
#define SPARSE_LAYERS_MODELS_MODEL_LOADER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "config/experiment.pb.h"
#include "layers/replacement/sparse_replacement.h"
#include "models/gpt.h"
#include "models/lm_loader.h"

namespace sparse_layers::layers {

// A fitted replacement checkpoint (what //pipelines/train:fit writes): its path
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

#endif  // SPARSE_LAYERS_MODELS_MODEL_LOADER_H_
