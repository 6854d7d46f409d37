#include "pipelines/train/next_token_objective.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/common/status_macros.h"
#include "config/config_loader.h"
#include "datasets/text/token_shards.h"
#include "models/sampling.h"
#include "pipelines/train/lm_evaluation.h"

namespace sparse_layers::train {
namespace {

torch::Tensor ToTensor(const std::vector<int64_t>& values, int rows, int cols) {
  return torch::from_blob(const_cast<int64_t*>(values.data()), {rows, cols},
                          torch::kLong)
      .clone();
}

class NextTokenObjective : public TrainingObjective {
 public:
  NextTokenObjective(const config::ExperimentConfig& config,
                     const TrainerOptions& options, layers::GptImpl& model,
                     std::unique_ptr<datasets::TokenShardSet> train_shards,
                     std::unique_ptr<datasets::TokenShardSet> validation_shards,
                     int length)
      : config_(config),
        options_(options),
        model_(model),
        train_shards_(std::move(train_shards)),
        validation_shards_(std::move(validation_shards)),
        batch_size_(config.data().batch_size()),
        length_(length) {}

  // The samplers point into the shard sets, so they are made once those have
  // their final address.
  absl::Status OpenSamplers() {
    ASSIGN_OR_RETURN(sampler_, datasets::BatchSampler::Create(
                                   train_shards_.get(), batch_size_, length_,
                                   config_.runtime().seed()));
    ASSIGN_OR_RETURN(
        validation_sampler_,
        datasets::BatchSampler::Create(validation_shards_.get(), batch_size_,
                                       length_, config_.runtime().seed()));
    return absl::OkStatus();
  }

  absl::string_view unit() const override { return "tokens"; }
  absl::string_view loss_name() const override { return "loss"; }
  int64_t units_per_step() const override {
    return int64_t{batch_size_} * length_;
  }
  // The budget counts block matrix multiplies only, as the sgatlin code does
  // (hyperlinear/training/flops.py); the unembedding is reported beside it.
  int64_t forward_flops_per_unit() const override {
    return model_.BlockFlopsPerToken(length_);
  }
  std::string train_data_manifest() const override {
    return train_shards_->manifest().SerializeAsString();
  }

  std::vector<torch::Tensor> TrainableParameters() override {
    return model_.parameters();
  }
  absl::Status Initialize() override {
    if (options_.init_from.empty()) return absl::OkStatus();
    return InitializeFromCheckpoint(options_.init_from, model_,
                                    config_.init().upcycle_noise());
  }
  void StartTraining() override { model_.train(); }
  torch::Tensor Loss(int64_t step) override {
    const datasets::TokenBatch batch = sampler_->TrainBatch(step);
    model_.PrepareStep();
    return model_.Loss(ToTensor(batch.inputs, batch_size_, length_),
                       ToTensor(batch.targets, batch_size_, length_));
  }
  void AdjustGradients() override { model_.AdjustGradients(); }
  double Validate() override {
    return MeanCrossEntropy(model_, *validation_sampler_,
                            std::max(1, config_.eval().batches()));
  }

  absl::Status Summarize(TrainingSummary& summary) override {
    summary.set_objective("next_token_cross_entropy");
    summary.set_parameters(model_.ParameterCount());
    summary.set_unembedding_flops_per_token(
        model_.ForwardFlopsPerToken(length_) - forward_flops_per_unit());
    summary.set_validation_perplexity(std::exp(summary.validation_loss()));
    if (config_.eval().sample_tokens() <= 0) return absl::OkStatus();
    const datasets::TokenBatch prompt_batch =
        validation_sampler_->EvalBatch(0, 1);
    std::vector<int64_t> prompt(
        prompt_batch.inputs.begin(),
        prompt_batch.inputs.begin() + std::min(16, length_));
    layers::SamplingOptions sampling;
    sampling.new_tokens = config_.eval().sample_tokens();
    sampling.temperature = config_.eval().temperature();
    sampling.top_p = config_.eval().top_p();
    sampling.seed = config_.runtime().seed();
    const std::vector<int64_t> sample =
        layers::Sample(model_, prompt, sampling);
    for (int64_t id : prompt) summary.add_sample_prompt_ids(id);
    for (int64_t id : sample) summary.add_sample_ids(id);
    return absl::OkStatus();
  }

 private:
  const config::ExperimentConfig& config_;
  const TrainerOptions& options_;
  layers::GptImpl& model_;
  std::unique_ptr<datasets::TokenShardSet> train_shards_;
  std::unique_ptr<datasets::TokenShardSet> validation_shards_;
  std::optional<datasets::BatchSampler> sampler_;
  std::optional<datasets::BatchSampler> validation_sampler_;
  const int batch_size_;
  const int length_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<TrainingObjective>> MakeNextTokenObjective(
    const config::ExperimentConfig& config, const TrainerOptions& options,
    layers::GptImpl& model) {
  if (!options.train_activations.empty()) {
    return absl::InvalidArgumentError(
        "--train_activations fits a replacement layer: run "
        "//pipelines/train:fit");
  }
  const std::string train_manifest = options.train_manifest.empty()
                                         ? config.data().train_manifest()
                                         : options.train_manifest;
  const std::string validation_manifest =
      options.validation_manifest.empty() ? config.data().validation_manifest()
                                          : options.validation_manifest;
  ASSIGN_OR_RETURN(auto train_shards,
                   datasets::TokenShardSet::Open(train_manifest));
  ASSIGN_OR_RETURN(auto validation_shards,
                   datasets::TokenShardSet::Open(validation_manifest));
  RETURN_IF_ERROR(train_shards->CheckSameTokenizer(*validation_shards));
  const int64_t vocab_size = model.options().vocab_size;
  if (train_shards->manifest().vocab_size() > vocab_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model.vocab_size ", vocab_size, " is smaller than the tokenizer's ",
        train_shards->manifest().vocab_size()));
  }
  const int context = model.options().context_length;
  const int length = config::TrainingWindowLength(config);
  if (length > context) {
    return absl::InvalidArgumentError(
        "data.sequence_length exceeds model.context_length");
  }
  auto objective = std::make_unique<NextTokenObjective>(
      config, options, model, std::move(train_shards),
      std::move(validation_shards), length);
  RETURN_IF_ERROR(objective->OpenSamplers());
  return objective;
}

}  // namespace sparse_layers::train
