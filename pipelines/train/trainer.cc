#include "pipelines/train/trainer.h"

#include <torch/torch.h>

#include <cstdio>
#include <memory>

#include "absl/strings/str_cat.h"
#include "base/common/status_macros.h"
#include "layers/ffn/dense_mlp.h"
#include "layers/ffn/mixture_of_experts.h"
#include "models/gpt.h"
#include "models/lm_loader.h"
#include "ops/backend/torch_runtime.h"
#include "pipelines/train/training_loop.h"

namespace sparse_layers::train {

absl::StatusOr<TrainingSummary> Train(const config::ExperimentConfig& config,
                                      const TrainerOptions& options,
                                      ObjectiveFactory make_objective) {
  if (config.runtime().threads() > 0) {
    RETURN_IF_ERROR(backend::SetTorchThreads(config.runtime().threads()));
  }
  ASSIGN_OR_RETURN(std::shared_ptr<layers::GptImpl> model,
                   layers::InitializeModel(config));
  ASSIGN_OR_RETURN(std::unique_ptr<TrainingObjective> objective,
                   make_objective(config, options, *model));
  return RunTrainingLoop(config, options, *model, *objective);
}

absl::Status InitializeFromCheckpoint(const std::string& parent_checkpoint,
                                      layers::GptImpl& model,
                                      double upcycle_noise) {
  ASSIGN_OR_RETURN(const layers::LoadedModel parent,
                   layers::LoadModel(parent_checkpoint));
  torch::NoGradGuard no_grad;
  const auto parent_parameters = parent.model->named_parameters();
  int64_t copied = 0, upcycled = 0;
  // A tensor both models name but shape differently means the parent is of
  // another architecture (width, vocabulary, context): copying around it
  // would start the child from noise while claiming a parent.
  for (auto& item : model.named_parameters()) {
    const torch::Tensor* source = parent_parameters.find(item.key());
    if (source == nullptr) continue;
    if (source->sizes() != item.value().sizes()) {
      return absl::FailedPreconditionError(
          absl::StrCat("--init_from ", parent_checkpoint, ": ", item.key(),
                       " has shape ", c10::str(source->sizes()), " there and ",
                       c10::str(item.value().sizes()), " in this model"));
    }
    item.value().copy_(*source);
    ++copied;
  }
  for (size_t i = 0; i < model.blocks.size() && i < parent.model->blocks.size();
       ++i) {
    auto mixture = std::dynamic_pointer_cast<layers::MixtureOfExpertsImpl>(
        model.blocks[i]->ffn);
    auto dense = std::dynamic_pointer_cast<layers::DenseMlpImpl>(
        parent.model->blocks[i]->ffn);
    if (mixture && dense) {
      const std::vector<int64_t> expert = {mixture->options().d_ffn,
                                           mixture->options().d_model};
      if (dense->in->weight.sizes() != c10::IntArrayRef(expert)) {
        return absl::FailedPreconditionError(absl::StrCat(
            "--init_from ", parent_checkpoint, ": block ", i,
            "'s dense FFN is ", c10::str(dense->in->weight.sizes()),
            ", the experts to upcycle into are ", c10::str(expert)));
      }
      mixture->UpcycleFrom(*dense, upcycle_noise);
      ++upcycled;
    }
  }
  if (copied == 0 && upcycled == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("--init_from ", parent_checkpoint,
                     ": no parameter of that model fits this one"));
  }
  std::fprintf(stderr,
               "train: initialised from %s: %lld tensors copied, %lld FFNs "
               "upcycled\n",
               parent_checkpoint.c_str(), static_cast<long long>(copied),
               static_cast<long long>(upcycled));
  return absl::OkStatus();
}

}  // namespace sparse_layers::train
