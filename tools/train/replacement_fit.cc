// The trainer's fitting mode: a sparse replacement layer trained on an
// activation cache to reproduce a frozen FFN (MxD, arXiv:2505.21364 Sec. 3.1,
// and its released code: normalised MSE, AdamW, warm-up then constant, output
// bias at the targets' mean, decoder rows kept at unit norm), or a Lorsa
// trained on whole windows of an attention cache to reproduce a frozen
// attention layer (Lorsa, arXiv:2504.20938 Sec. 3.1: squared error, here
// divided by the batch's variance, i.e. the batch FVU, so the learning rate
// does not depend on the activations' scale). The checkpoint is the whole base
// model with the fitted layer spliced in, so every LM tool (CE, sampling,
// hooks) reads it as is.
#include <torch/torch.h>

#include <cmath>
#include <cstdio>
#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "datasets/activations/activation_shards.h"
#include "google/protobuf/text_format.h"
#include "layers/backend/torch_runtime.h"
#include "layers/models/checkpoint.h"
#include "layers/replacement/nmse.h"
#include "layers/replacement/sparse_replacement.h"
#include "tools/common/file_io.h"
#include "tools/train/replacement_metrics.h"
#include "tools/train/trainer_internal.h"

namespace sparse_layers::train {
namespace {

constexpr char kCsvHeader[] =
    "step,rows,learning_rate,train_nmse,grad_norm,validation_nmse\n";

}  // namespace

absl::StatusOr<TrainingSummary> FitReplacement(
    const config::ExperimentConfig& config, const TrainerOptions& options) {
  if (config.runtime().threads() > 0) {
    if (absl::Status s = backend::SetTorchThreads(config.runtime().threads());
        !s.ok()) {
      return s;
    }
  }
  torch::manual_seed(config.runtime().seed());
  auto model_options = layers::GptOptionsFromConfig(config.model());
  if (!model_options.ok()) return model_options.status();
  if (model_options->replacement.layer < 0) {
    return absl::InvalidArgumentError(
        "fitting on activations needs model.replacement");
  }
  if (options.init_from.empty()) {
    return absl::InvalidArgumentError(
        "fitting on activations needs --init_from (the base model)");
  }
  auto created = layers::GptImpl::Create(*model_options);
  if (!created.ok()) return created.status();
  layers::GptImpl& model = **created;
  auto layer = std::dynamic_pointer_cast<layers::SparseReplacementImpl>(
      model.ReplacementLayer());
  layers::Lorsa lorsa = model.LorsaReplacement();
  if (!layer && !lorsa) {
    return absl::InvalidArgumentError(
        absl::StrCat("model.replacement.ffn '", model_options->replacement.ffn,
                     "' is not a sparse replacement layer"));
  }
  const bool on_output = model_options->replacement.on_output;

  auto train = datasets::ActivationSet::Open(options.train_activations);
  if (!train.ok()) return train.status();
  auto validation = datasets::ActivationSet::Open(
      options.validation_activations.empty() ? options.train_activations
                                             : options.validation_activations);
  if (!validation.ok()) return validation.status();
  const int64_t d = model_options->d_model;
  const bool attention_cache =
      absl::StrContains((*train)->manifest().hook_out(), ".attn.");
  if ((*train)->d_in() != d || (*train)->d_out() != d ||
      (*train)->manifest().layer() != model_options->replacement.layer ||
      attention_cache != model_options->replacement.attention_site) {
    return absl::InvalidArgumentError(absl::StrCat(
        options.train_activations, " caches block ",
        (*train)->manifest().layer(), " (", (*train)->manifest().hook_out(),
        ") at width ", (*train)->d_in(), "; the replacement is at block ",
        model_options->replacement.layer, " of a width-", d, " model"));
  }
  for (const datasets::ActivationSet* cache :
       {train->get(), validation->get()}) {
    if (absl::Status s = cache->CheckMadeFrom(options.init_from); !s.ok()) {
      return s;
    }
  }

  // A Lorsa trains on activations normalised to mean norm sqrt(d) (as the
  // Lorsa authors' released code does: attention outputs can be tiny), then
  // the scales are folded into its weights; they come from the data, so a
  // resumed run agrees.
  double input_scale = 1.0, output_scale = 1.0;
  if (lorsa) {
    auto [x, y] =
        (*train)->Range(0, std::min<int64_t>((*train)->rows(), 16384));
    input_scale = std::sqrt(static_cast<double>(d)) /
                  x.norm(2, 1).mean().clamp_min(1e-12).item<double>();
    output_scale = std::sqrt(static_cast<double>(d)) /
                   y.norm(2, 1).mean().clamp_min(1e-12).item<double>();
  }
  // On an attention cache a step takes data.batch_size whole windows (Lorsa
  // mixes positions; its SAE baseline sees the same tokens per step).
  const int64_t window =
      attention_cache
          ? std::max<int64_t>(1, (*train)->manifest().sequence_length())
          : 1;
  const int64_t batch_units = config.data().batch_size();
  const int64_t batch_rows = batch_units * window;
  if (batch_rows <= 0) {
    return absl::InvalidArgumentError("data.batch_size must be positive");
  }
  const int64_t layer_flops = lorsa ? lorsa->ForwardFlopsPerToken(window)
                                    : layer->ForwardFlopsPerToken();
  const StepBudget budget =
      ComputeStepBudget(config.budget(), batch_rows, layer_flops);
  if (budget.steps <= 0) {
    return absl::InvalidArgumentError("the budget is smaller than one step");
  }

  std::string config_text;
  google::protobuf::TextFormat::PrintToString(config, &config_text);
  layers::CheckpointState state;
  state.config_text = config_text;
  state.log_csv = kCsvHeader;
  for (const torch::Tensor& p : model.parameters()) p.requires_grad_(false);
  std::vector<torch::Tensor> parameters =
      lorsa ? lorsa->parameters() : layer->parameters();
  for (torch::Tensor& p : parameters) p.requires_grad_(true);
  std::unique_ptr<torch::optim::AdamW> optimizer =
      MakeOptimizer(parameters, config.optimizer());
  const bool resuming =
      options.resume && std::filesystem::exists(options.checkpoint_path);
  if (resuming) {
    auto restored =
        layers::LoadCheckpoint(options.checkpoint_path, model, optimizer.get());
    if (!restored.ok()) return restored.status();
    if (restored->config_text != config_text) {
      return absl::FailedPreconditionError(absl::StrCat(
          options.checkpoint_path, " was written with a different config"));
    }
    state = *std::move(restored);
    if (state.step >= budget.steps) {
      if (std::optional<TrainingSummary> kept = KeptSummary(options)) {
        return *kept;
      }
    }
  } else {
    if (absl::Status s = InitializeFromCheckpoint(options.init_from, model, 0);
        !s.ok()) {
      return s;
    }
    const auto& mean = (*train)->manifest().output_mean();
    const torch::Tensor output_mean =
        torch::tensor(std::vector<float>(mean.begin(), mean.end()));
    if (lorsa) {
      torch::NoGradGuard no_grad;
      lorsa->b_o.copy_(output_mean * output_scale);
    } else {
      layer->InitOutputBias(output_mean);
    }
  }
  // Validation: FVU of whole windows for a Lorsa, the fit metrics otherwise.
  const auto validate = [&](int64_t rows) {
    return lorsa ? EvaluateLorsaOnActivations(*lorsa, **validation, window,
                                              rows / window, batch_units,
                                              input_scale, output_scale)
                 : EvaluateOnActivations(*layer, **validation, on_output, rows,
                                         batch_rows);
  };

  const int eval_every = config.eval().every_steps();
  const int64_t eval_rows = std::max(1, config.eval().batches()) * batch_rows;
  const double clip = config.optimizer().gradient_clip_norm();
  const uint64_t seed = config.runtime().seed();
  ActivationFit last_validation{std::nan(""), 0, 0, 0};
  const auto start = Clock::now();
  auto last_progress = start;
  const int64_t first_step = state.step;
  model.eval();  // Only the replacement layer trains (dropout-free anyway).
  if (lorsa) {
    lorsa->train();
  } else {
    layer->train();
  }
  for (int64_t step = state.step; step < budget.steps; ++step) {
    const double lr =
        ScheduleLearningRate(config, step, budget.steps, *optimizer);
    auto [x, y] = (*train)->TrainBatch(step, batch_units, seed, window);
    optimizer->zero_grad();
    torch::Tensor loss;
    if (lorsa) {
      const torch::Tensor prediction =
          lorsa->forward(x.view({batch_units, window, d}) * input_scale)
              .reshape({-1, d});
      const torch::Tensor target = y * output_scale;
      loss = (prediction - target).square().sum() /
             (target - target.mean(0, /*keepdim=*/true)).square().sum();
    } else {
      layer->PrepareStep();
      loss = layers::NormalisedMse(
          layer->Forward(on_output ? y : x, layers::HookPoint()), y);
    }
    const double loss_value = loss.item<double>();
    if (!std::isfinite(loss_value)) {
      return absl::InternalError(
          absl::StrCat("normalised MSE is ", loss_value, " at step ", step));
    }
    loss.backward();
    if (!lorsa) layer->AdjustGradients();
    const double grad_norm =
        clip > 0 ? torch::nn::utils::clip_grad_norm_(parameters, clip) : 0.0;
    optimizer->step();
    state.step = step + 1;
    const bool last = state.step == budget.steps;
    std::string validation_field;
    if (last || (eval_every > 0 && state.step % eval_every == 0)) {
      last_validation = validate(eval_rows);
      validation_field = absl::StrFormat("%.6f", last_validation.nmse);
    }
    absl::StrAppendFormat(&state.log_csv, "%d,%d,%.6e,%.6f,%.6f,%s\n",
                          state.step, state.step * batch_rows, lr, loss_value,
                          grad_norm, validation_field);
    const auto now = Clock::now();
    const double elapsed = std::chrono::duration<double>(now - start).count();
    if (last || !validation_field.empty() ||
        std::chrono::duration<double>(now - last_progress).count() >=
            options.progress_every_seconds) {
      last_progress = now;
      const double done = static_cast<double>(state.step - first_step);
      std::fprintf(
          stderr,
          "train: fit step %lld/%lld nmse %.4f%s | %.0f rows/s | "
          "ETA %s\n",
          static_cast<long long>(state.step),
          static_cast<long long>(budget.steps), loss_value,
          validation_field.empty()
              ? ""
              : absl::StrCat(" val ", validation_field).c_str(),
          done * batch_rows / elapsed,
          FormatDuration(elapsed / done * (budget.steps - state.step)).c_str());
    }
    const int every = config.runtime().checkpoint_every_steps();
    if (!last && every > 0 && state.step % every == 0) {
      if (absl::Status s = layers::SaveCheckpoint(
              options.checkpoint_path, model, optimizer.get(), state);
          !s.ok()) {
        return s;
      }
    }
  }
  const double wall =
      std::chrono::duration<double>(Clock::now() - start).count();
  if (lorsa) {
    lorsa->FoldInputOutputScales(input_scale, output_scale);
    input_scale = output_scale = 1.0;
  }
  if (std::isnan(last_validation.nmse)) last_validation = validate(eval_rows);

  TrainingSummary summary =
      RunSummary(config, config_text, state.step, first_step, batch_rows,
                 layer_flops, wall, budget.stopped_by, state.log_csv,
                 (*train)->manifest().SerializeAsString());
  summary.set_objective(lorsa ? "fvu" : "normalised_mse");
  int64_t layer_parameters = 0;
  for (const torch::Tensor& p : parameters) layer_parameters += p.numel();
  summary.set_parameters(layer_parameters);
  summary.set_validation_loss(last_validation.nmse);
  summary.set_l0(last_validation.l0);
  summary.set_dead_fraction(last_validation.dead_fraction);
  if (absl::Status s =
          WriteRunOutputs(options, model, optimizer.get(), state, summary);
      !s.ok()) {
    return s;
  }
  return summary;
}

}  // namespace sparse_layers::train
