#include "models/model_loader.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "base/common/status_macros.h"

namespace sparse_layers::layers {

absl::StatusOr<LoadedReplacement> LoadReplacement(
    const std::string& checkpoint_path, FitKind kind) {
  ASSIGN_OR_RETURN(LoadedModel loaded, LoadModel(checkpoint_path));
  LoadedReplacement result;
  result.path = checkpoint_path;
  result.spec = loaded.config.model().replacement();
  result.layer = std::dynamic_pointer_cast<layers::SparseReplacementImpl>(
      loaded.model->ReplacementLayer());
  if (kind == FitKind::kAttentionSite) {
    if (result.spec.site() != config::FfnReplacement::ATTN) {
      return absl::InvalidArgumentError(
          absl::StrCat(checkpoint_path, " is not an attention-site fit"));
    }
  } else if (!result.layer) {
    return absl::InvalidArgumentError(
        absl::StrCat(checkpoint_path, " has no sparse replacement layer"));
  }
  result.loaded = std::move(loaded);
  return result;
}

absl::StatusOr<std::vector<LoadedReplacement>> LoadReplacements(
    const std::vector<std::string>& paths, FitKind kind) {
  std::vector<LoadedReplacement> fits;
  for (const std::string& path : paths) {
    ASSIGN_OR_RETURN(LoadedReplacement fit, LoadReplacement(path, kind));
    fits.push_back(std::move(fit));
  }
  return fits;
}

absl::Status CheckFittedOn(const LoadedReplacement& fit,
                           const LoadedModel& base,
                           const std::string& base_path) {
  const auto base_parameters = base.model->named_parameters();
  for (const auto& item : fit.loaded.model->named_parameters()) {
    const torch::Tensor* source = base_parameters.find(item.key());
    if (source == nullptr) continue;  // The replacement's own tensors.
    if (source->sizes() != item.value().sizes()) {
      return absl::FailedPreconditionError(absl::StrCat(
          fit.path, " was fitted on another base model: its ", item.key(),
          " has shape ", c10::str(item.value().sizes()), ", ", base_path, "'s ",
          c10::str(source->sizes())));
    }
    if (!torch::equal(*source, item.value())) {
      return absl::FailedPreconditionError(
          absl::StrCat(fit.path, " was fitted on another base model: its ",
                       item.key(), " differs from ", base_path, "'s"));
    }
  }
  return absl::OkStatus();
}

}  // namespace sparse_layers::layers
