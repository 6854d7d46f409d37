#include "layers/models/lm_loader.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "google/protobuf/text_format.h"
#include "layers/models/checkpoint.h"

namespace sparse_layers::layers {

absl::StatusOr<std::shared_ptr<GptImpl>> InitializeModel(
    const config::ExperimentConfig& config) {
  torch::manual_seed(config.runtime().seed());
  auto options = layers::GptOptionsFromConfig(config.model());
  if (!options.ok()) return options.status();
  return layers::GptImpl::Create(*options);
}

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

}  // namespace sparse_layers::layers
