#include "pipelines/train/replacement_objectives.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/common/status_macros.h"
#include "layers/attention/causal_attention.h"
#include "layers/replacement/nmse.h"
#include "layers/replacement/sparse_replacement.h"
#include "pipelines/activations/activation_shards.h"
#include "pipelines/train/replacement_metrics.h"

namespace sparse_layers::train {
namespace {

// What both fits share: the caches, the frozen base, initialisation from the
// base checkpoint and the fit metrics of the summary.
class CachedActivationObjective : public TrainingObjective {
 public:
  CachedActivationObjective(const config::ExperimentConfig& config,
                            const TrainerOptions& options,
                            layers::GptImpl& model,
                            std::unique_ptr<datasets::ActivationSet> train,
                            std::unique_ptr<datasets::ActivationSet> validation,
                            torch::nn::Module& fitted, int64_t window)
      : config_(config),
        options_(options),
        model_(model),
        train_(std::move(train)),
        validation_(std::move(validation)),
        fitted_(fitted),
        window_(window),
        batch_units_(config.data().batch_size()) {}

  absl::string_view unit() const override { return "rows"; }
  absl::string_view loss_name() const override { return "nmse"; }
  int64_t units_per_step() const override { return batch_units_ * window_; }
  std::string train_data_manifest() const override {
    return train_->manifest().SerializeAsString();
  }

  std::vector<torch::Tensor> TrainableParameters() override {
    for (const torch::Tensor& p : model_.parameters()) p.requires_grad_(false);
    parameters_ = fitted_.parameters();
    for (torch::Tensor& p : parameters_) p.requires_grad_(true);
    return parameters_;
  }
  absl::Status Initialize() override {
    RETURN_IF_ERROR(InitializeFromCheckpoint(options_.init_from, model_, 0));
    const auto& mean = train_->manifest().output_mean();
    InitOutputBias(torch::tensor(std::vector<float>(mean.begin(), mean.end())));
    return absl::OkStatus();
  }
  void StartTraining() override {
    model_.eval();  // Only the replacement layer trains (dropout-free anyway).
    fitted_.train();
  }
  double Validate() override {
    // Evaluation mode: BatchTopK codes by its threshold, no penalty kept.
    fitted_.eval();
    last_validation_ =
        Evaluate(std::max(1, config_.eval().batches()) * units_per_step());
    fitted_.train();
    return last_validation_.nmse;
  }
  absl::Status Summarize(TrainingSummary& summary) override {
    summary.set_objective(objective_name());
    int64_t parameters = 0;
    for (const torch::Tensor& p : parameters_) parameters += p.numel();
    summary.set_parameters(parameters);
    summary.set_l0(last_validation_.l0);
    summary.set_dead_fraction(last_validation_.dead_fraction);
    return absl::OkStatus();
  }

 protected:
  virtual const char* objective_name() const = 0;
  virtual void InitOutputBias(const torch::Tensor& output_mean) = 0;
  // The fit metrics on the validation cache's first `rows` rows.
  virtual ActivationFit Evaluate(int64_t rows) = 0;

  std::pair<torch::Tensor, torch::Tensor> TrainBatch(int64_t step) const {
    return train_->TrainBatch(step, batch_units_, config_.runtime().seed(),
                              window_);
  }

  const config::ExperimentConfig& config_;
  const TrainerOptions& options_;
  layers::GptImpl& model_;
  std::unique_ptr<datasets::ActivationSet> train_;
  std::unique_ptr<datasets::ActivationSet> validation_;
  torch::nn::Module& fitted_;  // The layer being fitted.
  const int64_t window_;       // Rows per unit of data.batch_size.
  const int64_t batch_units_;
  std::vector<torch::Tensor> parameters_;
  ActivationFit last_validation_;
};

class FfnReplacementObjective : public CachedActivationObjective {
 public:
  FfnReplacementObjective(const config::ExperimentConfig& config,
                          const TrainerOptions& options, layers::GptImpl& model,
                          std::unique_ptr<datasets::ActivationSet> train,
                          std::unique_ptr<datasets::ActivationSet> validation,
                          std::shared_ptr<layers::SparseReplacementImpl> layer,
                          int64_t window)
      : CachedActivationObjective(config, options, model, std::move(train),
                                  std::move(validation), *layer, window),
        layer_(std::move(layer)),
        on_output_(model.options().replacement.on_output) {}

  int64_t forward_flops_per_unit() const override {
    return layer_->ForwardFlopsPerToken();
  }
  torch::Tensor Loss(int64_t step) override {
    auto [x, y] = TrainBatch(step);
    layer_->PrepareStep();
    // An SAE (on_output) reconstructs the FFN output from itself.
    torch::Tensor loss = layers::NormalisedMse(
        layer_->Forward(on_output_ ? y : x, layers::HookPoint()), y);
    // The L1 or L0 penalty of the ReLU and JumpReLU rules.
    const torch::Tensor penalty = layer_->AuxiliaryLoss();
    return penalty.defined() ? loss + penalty : loss;
  }
  void AdjustGradients() override { layer_->AdjustGradients(); }

 protected:
  const char* objective_name() const override { return "normalised_mse"; }
  void InitOutputBias(const torch::Tensor& output_mean) override {
    layer_->InitOutputBias(output_mean);
  }
  ActivationFit Evaluate(int64_t rows) override {
    return EvaluateOnActivations(*layer_, *validation_, on_output_, rows,
                                 units_per_step());
  }

 private:
  std::shared_ptr<layers::SparseReplacementImpl> layer_;
  const bool on_output_;
};

class LorsaObjective : public CachedActivationObjective {
 public:
  LorsaObjective(const config::ExperimentConfig& config,
                 const TrainerOptions& options, layers::GptImpl& model,
                 std::unique_ptr<datasets::ActivationSet> train,
                 std::unique_ptr<datasets::ActivationSet> validation,
                 layers::Lorsa lorsa, int64_t window)
      : CachedActivationObjective(config, options, model, std::move(train),
                                  std::move(validation), *lorsa, window),
        lorsa_(std::move(lorsa)),
        d_(model.options().d_model) {
    // Trains on activations normalised to mean norm sqrt(d) (as the Lorsa
    // authors' released code does: attention outputs can be tiny), then the
    // scales are folded into its weights; they come from the data, so a
    // resumed run agrees.
    auto [x, y] = train_->Range(0, std::min<int64_t>(train_->rows(), 16384));
    const double sqrt_d = std::sqrt(static_cast<double>(d_));
    input_scale_ = sqrt_d / x.norm(2, 1).mean().clamp_min(1e-12).item<double>();
    output_scale_ =
        sqrt_d / y.norm(2, 1).mean().clamp_min(1e-12).item<double>();
  }

  int64_t forward_flops_per_unit() const override {
    return lorsa_->ForwardFlopsPerToken(window_);
  }
  torch::Tensor Loss(int64_t step) override {
    auto [x, y] = TrainBatch(step);
    const torch::Tensor prediction =
        lorsa_->forward(x.view({batch_units_, window_, d_}) * input_scale_)
            .reshape({-1, d_});
    const torch::Tensor target = y * output_scale_;
    return (prediction - target).square().sum() /
           (target - target.mean(0, /*keepdim=*/true)).square().sum();
  }
  void AdjustGradients() override {}
  // The frozen-copy strategy of App. B.3 (Table 3) trains the OV side only.
  std::vector<torch::Tensor> TrainableParameters() override {
    std::vector<torch::Tensor> trainable =
        CachedActivationObjective::TrainableParameters();
    if (qk_init() != config::FfnReplacement::QK_FROM_ATTENTION_FROZEN) {
      return trainable;
    }
    const std::vector<torch::Tensor> qk = {lorsa_->w_q, lorsa_->w_k,
                                           lorsa_->b_q, lorsa_->b_k};
    std::vector<torch::Tensor> kept;
    for (torch::Tensor& p : trainable) {
      const bool frozen = std::any_of(qk.begin(), qk.end(),
                                      [&](auto& q) { return q.is_same(p); });
      if (frozen) {
        p.requires_grad_(false);
      } else {
        kept.push_back(p);
      }
    }
    return kept;
  }
  absl::Status Initialize() override {
    RETURN_IF_ERROR(CachedActivationObjective::Initialize());
    if (qk_init() == config::FfnReplacement::QK_RANDOM) {
      return absl::OkStatus();
    }
    // QK head g copies the base's head floor(g / r) (App. B.3), over the
    // input scale: Lorsa sees x s_in, and FinishTraining folds s_in back.
    const auto* attention =
        dynamic_cast<const layers::CausalSelfAttentionImpl*>(
            model_.blocks.at(model_.options().replacement.layer)
                ->attention.get());
    if (attention == nullptr) {
      return absl::InvalidArgumentError(
          "model.replacement.qk_init copies a multi-head attention's QK; the "
          "replaced block has none");
    }
    lorsa_->InitQkFromAttention(*attention);
    torch::NoGradGuard no_grad;
    lorsa_->w_q.div_(input_scale_);
    lorsa_->w_k.div_(input_scale_);
    return absl::OkStatus();
  }
  void FinishTraining() override {
    lorsa_->FoldInputOutputScales(input_scale_, output_scale_);
    input_scale_ = output_scale_ = 1.0;
  }

 protected:
  const char* objective_name() const override { return "fvu"; }
  void InitOutputBias(const torch::Tensor& output_mean) override {
    torch::NoGradGuard no_grad;
    lorsa_->b_o.copy_(output_mean * output_scale_);
  }
  // The FVU of whole windows.
  ActivationFit Evaluate(int64_t rows) override {
    return EvaluateLorsaOnActivations(*lorsa_, *validation_, window_,
                                      rows / window_, batch_units_,
                                      input_scale_, output_scale_);
  }

 private:
  config::FfnReplacement::QkInit qk_init() const {
    return model_.options().replacement.qk_init;
  }

  layers::Lorsa lorsa_;
  const int64_t d_;
  double input_scale_ = 1.0;
  double output_scale_ = 1.0;
};

}  // namespace

absl::StatusOr<std::unique_ptr<TrainingObjective>> MakeReplacementObjective(
    const config::ExperimentConfig& config, const TrainerOptions& options,
    layers::GptImpl& model) {
  const layers::GptOptions& model_options = model.options();
  if (options.train_activations.empty()) {
    return absl::InvalidArgumentError(
        "fitting needs --train_activations (an activation cache); an LM "
        "trains on tokens with //pipelines/train:train");
  }
  if (model_options.replacement.layer < 0) {
    return absl::InvalidArgumentError(
        "fitting on activations needs model.replacement");
  }
  if (options.init_from.empty()) {
    return absl::InvalidArgumentError(
        "fitting on activations needs --init_from (the base model)");
  }
  auto layer = std::dynamic_pointer_cast<layers::SparseReplacementImpl>(
      model.ReplacementLayer());
  layers::Lorsa lorsa = model.LorsaReplacement();
  if (!layer && !lorsa) {
    return absl::InvalidArgumentError(
        absl::StrCat("model.replacement.ffn '", model_options.replacement.ffn,
                     "' is not a sparse replacement layer"));
  }
  const config::FfnReplacement::Sparsity sparsity =
      model_options.replacement.sparsity;
  if ((sparsity == config::FfnReplacement::RELU_L1 ||
       sparsity == config::FfnReplacement::JUMP_RELU) &&
      model_options.replacement.sparsity_penalty <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "fitting a ", config::FfnReplacement::Sparsity_Name(sparsity),
        " layer needs model.replacement.sparsity_penalty > 0 (its penalty is "
        "what makes it sparse)"));
  }
  ASSIGN_OR_RETURN(auto train,
                   datasets::ActivationSet::Open(options.train_activations));
  ASSIGN_OR_RETURN(auto validation, datasets::ActivationSet::Open(
                                        options.validation_activations.empty()
                                            ? options.train_activations
                                            : options.validation_activations));
  const int64_t d = model_options.d_model;
  const bool attention_cache =
      absl::StrContains(train->manifest().hook_out(), ".attn.");
  if (train->d_in() != d || train->d_out() != d ||
      train->manifest().layer() != model_options.replacement.layer ||
      attention_cache != model_options.replacement.attention_site) {
    return absl::InvalidArgumentError(absl::StrCat(
        options.train_activations, " caches block ", train->manifest().layer(),
        " (", train->manifest().hook_out(), ") at width ", train->d_in(),
        "; the replacement is at block ", model_options.replacement.layer,
        " of a width-", d, " model"));
  }
  for (const datasets::ActivationSet* cache : {train.get(), validation.get()}) {
    RETURN_IF_ERROR(cache->CheckMadeFrom(options.init_from));
  }
  RETURN_IF_ERROR(train->CheckSameSiteAs(*validation));
  if (config.data().batch_size() <= 0) {
    return absl::InvalidArgumentError("data.batch_size must be positive");
  }
  // On an attention cache a step takes data.batch_size whole windows: Lorsa
  // mixes positions, and its SAE baseline sees the same tokens per step.
  const int64_t window =
      attention_cache
          ? std::max<int64_t>(1, train->manifest().sequence_length())
          : 1;
  if (lorsa) {
    return std::make_unique<LorsaObjective>(
        config, options, model, std::move(train), std::move(validation), lorsa,
        window);
  }
  return std::make_unique<FfnReplacementObjective>(
      config, options, model, std::move(train), std::move(validation), layer,
      window);
}

}  // namespace sparse_layers::train
