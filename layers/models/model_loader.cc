#include "layers/models/model_loader.h"

#include "absl/strings/str_cat.h"
#include "google/protobuf/text_format.h"
#include "layers/models/checkpoint.h"

namespace sparse_layers::layers {

absl::StatusOr<LoadedModel> LoadModel(const std::string& checkpoint_path) {
  absl::StatusOr<std::string> text = ReadCheckpointConfig(checkpoint_path);
  if (!text.ok()) return text.status();
  LoadedModel loaded;
  if (!google::protobuf::TextFormat::ParseFromString(*text, &loaded.config)) {
    return absl::InvalidArgumentError(
        absl::StrCat(checkpoint_path, ": unreadable config"));
  }
  auto options = layers::GptOptionsFromConfig(loaded.config.model());
  if (!options.ok()) return options.status();
  auto model = layers::GptImpl::Create(*options);
  if (!model.ok()) return model.status();
  if (auto restored = LoadCheckpoint(checkpoint_path, **model, nullptr);
      !restored.ok()) {
    return restored.status();
  }
  loaded.model = *std::move(model);
  loaded.model->eval();
  return loaded;
}

absl::StatusOr<LoadedReplacement> LoadReplacement(
    const std::string& checkpoint_path) {
  absl::StatusOr<LoadedModel> loaded = LoadModel(checkpoint_path);
  if (!loaded.ok()) return loaded.status();
  auto layer = std::dynamic_pointer_cast<layers::SparseReplacementImpl>(
      loaded->model->ReplacementLayer());
  if (!layer) {
    return absl::InvalidArgumentError(
        absl::StrCat(checkpoint_path, " has no sparse replacement layer"));
  }
  LoadedReplacement result;
  result.spec = loaded->config.model().replacement();
  result.loaded = *std::move(loaded);
  result.layer = std::move(layer);
  return result;
}

absl::Status CheckFittedOn(const LoadedReplacement& fit,
                           const std::string& fit_path, const LoadedModel& base,
                           const std::string& base_path) {
  const auto base_parameters = base.model->named_parameters();
  for (const auto& item : fit.loaded.model->named_parameters()) {
    const torch::Tensor* source = base_parameters.find(item.key());
    if (source == nullptr) continue;  // The replacement's own tensors.
    if (source->sizes() != item.value().sizes()) {
      return absl::FailedPreconditionError(absl::StrCat(
          fit_path, " was fitted on another base model: its ", item.key(),
          " has shape ", c10::str(item.value().sizes()), ", ", base_path, "'s ",
          c10::str(source->sizes())));
    }
    if (!torch::equal(*source, item.value())) {
      return absl::FailedPreconditionError(
          absl::StrCat(fit_path, " was fitted on another base model: its ",
                       item.key(), " differs from ", base_path, "'s"));
    }
  }
  return absl::OkStatus();
}

}  // namespace sparse_layers::layers
