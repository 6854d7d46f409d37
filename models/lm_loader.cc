#include "models/lm_loader.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "base/common/status_macros.h"
#include "google/protobuf/text_format.h"
#include "models/checkpoints/checkpoint.h"

namespace sparse_layers::layers {

absl::StatusOr<std::shared_ptr<GptImpl>> InitializeModel(
    const config::ExperimentConfig& config) {
  torch::manual_seed(config.runtime().seed());
  ASSIGN_OR_RETURN(const GptOptions options,
                   layers::GptOptionsFromConfig(config.model()));
  return layers::GptImpl::Create(options);
}

absl::StatusOr<LoadedModel> LoadModel(const std::string& checkpoint_path) {
  ASSIGN_OR_RETURN(const std::string text,
                   ReadCheckpointConfig(checkpoint_path));
  LoadedModel loaded;
  if (!google::protobuf::TextFormat::ParseFromString(text, &loaded.config)) {
    return absl::InvalidArgumentError(
        absl::StrCat(checkpoint_path, ": unreadable config"));
  }
  ASSIGN_OR_RETURN(const GptOptions options,
                   layers::GptOptionsFromConfig(loaded.config.model()));
  ASSIGN_OR_RETURN(loaded.model, layers::GptImpl::Create(options));
  RETURN_IF_ERROR(
      LoadCheckpoint(checkpoint_path, *loaded.model, nullptr).status());
  loaded.model->eval();
  return loaded;
}

}  // namespace sparse_layers::layers
