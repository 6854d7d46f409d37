#include "tools/train/trainer.h"

#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <memory>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "datasets/text/token_shards.h"
#include "datasets/text/tokenizer.h"
#include "google/protobuf/text_format.h"
#include "layers/backend/torch_runtime.h"
#include "layers/ffn/dense_mlp.h"
#include "layers/ffn/mixture_of_experts.h"
#include "layers/models/checkpoint.h"
#include "layers/models/gpt.h"
#include "layers/models/model_loader.h"
#include "layers/models/sampling.h"
#include "tools/common/digest.h"
#include "tools/common/file_io.h"
#include "tools/train/lr_schedule.h"
#include "tools/train/replacement_metrics.h"
#include "tools/train/trainer_internal.h"

namespace sparse_layers::train {
namespace {

constexpr char kCsvHeader[] =
    "step,tokens,learning_rate,train_loss,grad_norm,validation_loss\n";

torch::Tensor ToTensor(const std::vector<int64_t>& values, int rows, int cols) {
  return torch::from_blob(const_cast<int64_t*>(values.data()), {rows, cols},
                          torch::kLong)
      .clone();
}

}  // namespace

double TailMean(const std::vector<double>& losses) {
  if (losses.empty()) return 0;
  const size_t tail = std::max<size_t>(1, losses.size() / 10);
  double sum = 0;
  for (size_t i = losses.size() - tail; i < losses.size(); ++i) {
    sum += losses[i];
  }
  return sum / tail;
}

std::vector<double> LoggedTrainLosses(const std::string& log_csv) {
  std::vector<double> losses;
  for (absl::string_view line : absl::StrSplit(log_csv, '\n')) {
    const std::vector<absl::string_view> fields = absl::StrSplit(line, ',');
    double loss = 0;
    // The header and blank lines do not parse; rows hold the loss 4th.
    if (fields.size() > 3 && absl::SimpleAtod(fields[3], &loss)) {
      losses.push_back(loss);
    }
  }
  return losses;
}

std::optional<TrainingSummary> KeptSummary(const TrainerOptions& options) {
  const std::string& path = options.published_summary_path.empty()
                                ? options.summary_path
                                : options.published_summary_path;
  if (path.empty()) return std::nullopt;
  absl::StatusOr<std::string> text = ReadFileToString(path);
  TrainingSummary summary;
  if (!text.ok() ||
      !google::protobuf::TextFormat::ParseFromString(*text, &summary)) {
    return std::nullopt;
  }
  absl::StatusOr<std::string> digest = Sha256OfFile(options.checkpoint_path);
  if (!digest.ok() || *digest != summary.checkpoint_sha256()) {
    return std::nullopt;
  }
  return summary;
}

double ScheduleLearningRate(const config::ExperimentConfig& config,
                            int64_t step, int64_t steps,
                            torch::optim::AdamW& optimizer) {
  const double lr = LearningRate(
      config.schedule(), config.optimizer().learning_rate(), step, steps);
  for (auto& group : optimizer.param_groups()) {
    static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
  }
  return lr;
}

TrainingSummary RunSummary(const config::ExperimentConfig& config,
                           const std::string& config_text, int64_t steps,
                           int64_t first_step, int64_t units_per_step,
                           int64_t forward_flops_per_unit, double wall,
                           const std::string& stopped_by,
                           const std::string& log_csv,
                           const std::string& train_manifest) {
  TrainingSummary summary;
  summary.set_name(config.name());
  summary.set_steps(steps);
  summary.set_tokens(steps * units_per_step);
  summary.set_forward_flops_per_token(forward_flops_per_unit);
  summary.set_flops(3.0 * forward_flops_per_unit * summary.tokens());
  summary.set_final_train_loss(TailMean(LoggedTrainLosses(log_csv)));
  summary.set_wall_seconds(wall);
  summary.set_tokens_per_second((steps - first_step) * units_per_step /
                                std::max(wall, 1e-9));
  summary.set_threads(torch::get_num_threads());
  summary.set_stopped_by(stopped_by);
  summary.set_config_sha256(Sha256Hex(config_text));
  summary.set_train_data_sha256(Sha256Hex(train_manifest));
  return summary;
}

absl::Status RecordProvenance(const TrainerOptions& options,
                              TrainingSummary& summary) {
  absl::StatusOr<std::string> trainer = Sha256OfFile("/proc/self/exe");
  if (!trainer.ok()) return trainer.status();
  summary.set_trainer_sha256(*trainer);
  if (!options.init_from.empty()) {
    absl::StatusOr<std::string> parent = Sha256OfFile(options.init_from);
    if (!parent.ok()) return parent.status();
    summary.set_init_from_sha256(*parent);
  }
  if (options.build_identity_path.empty()) return absl::OkStatus();
  absl::StatusOr<std::string> identity =
      ReadFileToString(options.build_identity_path);
  if (!identity.ok()) return identity.status();
  for (absl::string_view line :
       absl::StrSplit(*identity, '\n', absl::SkipEmpty())) {
    summary.add_build_identity(std::string(line));
  }
  return absl::OkStatus();
}

absl::Status WriteRunOutputs(const TrainerOptions& options,
                             const torch::nn::Module& model,
                             torch::optim::AdamW* optimizer,
                             const layers::CheckpointState& state,
                             TrainingSummary& summary) {
  const std::string& path = options.final_checkpoint_path.empty()
                                ? options.checkpoint_path
                                : options.final_checkpoint_path;
  if (absl::Status s = layers::SaveCheckpoint(path, model, optimizer, state);
      !s.ok()) {
    return s;
  }
  absl::StatusOr<std::string> digest = Sha256OfFile(path);
  if (!digest.ok()) return digest.status();
  summary.set_checkpoint_sha256(*digest);
  if (absl::Status s = RecordProvenance(options, summary); !s.ok()) return s;
  if (!options.log_csv_path.empty()) {
    if (absl::Status s =
            WriteFileAtomically(options.log_csv_path, state.log_csv);
        !s.ok()) {
      return s;
    }
  }
  if (options.summary_path.empty()) return absl::OkStatus();
  std::string text;
  google::protobuf::TextFormat::PrintToString(summary, &text);
  return WriteFileAtomically(options.summary_path, text);
}

std::string FormatDuration(double seconds) {
  const int64_t total = static_cast<int64_t>(seconds);
  return absl::StrFormat("%d:%02d:%02d", total / 3600, total / 60 % 60,
                         total % 60);
}

std::unique_ptr<torch::optim::AdamW> MakeOptimizer(
    const std::vector<torch::Tensor>& parameters,
    const config::OptimizerConfig& config) {
  std::vector<torch::Tensor> decayed, not_decayed;
  for (const torch::Tensor& parameter : parameters) {
    (parameter.dim() >= 2 ? decayed : not_decayed).push_back(parameter);
  }
  auto options = torch::optim::AdamWOptions(config.learning_rate())
                     .betas({config.beta1() > 0 ? config.beta1() : 0.9,
                             config.beta2() > 0 ? config.beta2() : 0.95})
                     .eps(config.epsilon() > 0 ? config.epsilon() : 1e-8)
                     .weight_decay(config.weight_decay());
  auto no_decay = options;
  no_decay.weight_decay(0);
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(decayed,
                      std::make_unique<torch::optim::AdamWOptions>(options));
  groups.emplace_back(not_decayed,
                      std::make_unique<torch::optim::AdamWOptions>(no_decay));
  return std::make_unique<torch::optim::AdamW>(std::move(groups), options);
}

StepBudget ComputeStepBudget(const config::BudgetConfig& budget,
                             int64_t tokens_per_step,
                             int64_t forward_flops_per_token) {
  StepBudget result{std::numeric_limits<int64_t>::max(), ""};
  auto limit = [&](int64_t steps, const char* name) {
    if (steps < result.steps) result = {steps, name};
  };
  if (budget.max_steps() > 0) limit(budget.max_steps(), "max_steps");
  if (budget.max_tokens() > 0) {
    limit(budget.max_tokens() / tokens_per_step, "max_tokens");
  }
  if (budget.max_flops() > 0) {
    // Training FLOPs per step: 3 x forward (backward costs twice the forward).
    const double per_step =
        3.0 * static_cast<double>(forward_flops_per_token) * tokens_per_step;
    limit(static_cast<int64_t>(std::floor(budget.max_flops() / per_step)),
          "max_flops");
  }
  return result;
}

absl::StatusOr<TrainingSummary> Train(const config::ExperimentConfig& config,
                                      const TrainerOptions& options) {
  if (!options.train_activations.empty()) {
    return FitReplacement(config, options);
  }
  if (config.runtime().threads() > 0) {
    if (absl::Status status =
            backend::SetTorchThreads(config.runtime().threads());
        !status.ok()) {
      return status;
    }
  }
  torch::manual_seed(config.runtime().seed());

  absl::StatusOr<layers::GptOptions> model_options =
      layers::GptOptionsFromConfig(config.model());
  if (!model_options.ok()) return model_options.status();
  absl::StatusOr<std::shared_ptr<layers::GptImpl>> created =
      layers::GptImpl::Create(*model_options);
  if (!created.ok()) return created.status();
  layers::GptImpl& model = **created;

  const std::string train_manifest = options.train_manifest.empty()
                                         ? config.data().train_manifest()
                                         : options.train_manifest;
  const std::string validation_manifest =
      options.validation_manifest.empty() ? config.data().validation_manifest()
                                          : options.validation_manifest;
  auto train_shards = datasets::TokenShardSet::Open(train_manifest);
  if (!train_shards.ok()) return train_shards.status();
  auto validation_shards = datasets::TokenShardSet::Open(validation_manifest);
  if (!validation_shards.ok()) return validation_shards.status();
  if ((*train_shards)->manifest().vocab_size() > model_options->vocab_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("model.vocab_size ", model_options->vocab_size,
                     " is smaller than the tokenizer's ",
                     (*train_shards)->manifest().vocab_size()));
  }
  const int batch_size = config.data().batch_size();
  const int length = config.data().sequence_length() > 0
                         ? config.data().sequence_length()
                         : model_options->context_length;
  if (length > model_options->context_length) {
    return absl::InvalidArgumentError(
        "data.sequence_length exceeds model.context_length");
  }
  auto sampler = datasets::BatchSampler::Create(
      train_shards->get(), batch_size, length, config.runtime().seed());
  if (!sampler.ok()) return sampler.status();
  auto validation_sampler = datasets::BatchSampler::Create(
      validation_shards->get(), batch_size, length, config.runtime().seed());
  if (!validation_sampler.ok()) return validation_sampler.status();

  const int64_t tokens_per_step = int64_t{batch_size} * length;
  // The budget counts block matrix multiplies only, as the sgatlin code does
  // (hyperlinear/training/flops.py); the unembedding is reported beside it.
  const int64_t forward_flops = model.BlockFlopsPerToken(length);
  const StepBudget budget =
      ComputeStepBudget(config.budget(), tokens_per_step, forward_flops);
  if (budget.steps <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the budget (", budget.stopped_by, ") is smaller than one step of ",
        tokens_per_step, " tokens"));
  }

  std::unique_ptr<torch::optim::AdamW> optimizer =
      MakeOptimizer(model.parameters(), config.optimizer());
  std::string config_text;
  google::protobuf::TextFormat::PrintToString(config, &config_text);
  layers::CheckpointState state;
  state.config_text = config_text;
  state.log_csv = kCsvHeader;
  const bool resuming =
      options.resume && std::filesystem::exists(options.checkpoint_path);
  if (!options.init_from.empty() && !resuming) {
    if (absl::Status status = InitializeFromCheckpoint(
            options.init_from, model, config.init().upcycle_noise());
        !status.ok()) {
      return status;
    }
  }
  if (resuming) {
    absl::StatusOr<layers::CheckpointState> restored =
        layers::LoadCheckpoint(options.checkpoint_path, model, optimizer.get());
    if (!restored.ok()) return restored.status();
    if (restored->config_text != config_text) {
      return absl::FailedPreconditionError(absl::StrCat(
          options.checkpoint_path,
          " was written with a different config; remove it or drop --resume"));
    }
    state = *std::move(restored);
    std::fprintf(stderr, "train: resuming %s at step %lld\n",
                 config.name().c_str(), static_cast<long long>(state.step));
    if (state.step >= budget.steps) {
      if (std::optional<TrainingSummary> kept = KeptSummary(options)) {
        return *kept;
      }
    }
  }

  const int eval_every = config.eval().every_steps();
  const int eval_batches = std::max(1, config.eval().batches());
  const int checkpoint_every = config.runtime().checkpoint_every_steps();
  const double clip = config.optimizer().gradient_clip_norm();
  std::vector<torch::Tensor> parameters = model.parameters();
  const auto start_time = Clock::now();
  auto last_progress = start_time;
  const int64_t first_step = state.step;
  double validation_loss = std::nan("");
  model.train();

  for (int64_t step = state.step; step < budget.steps; ++step) {
    const double lr =
        ScheduleLearningRate(config, step, budget.steps, *optimizer);
    const datasets::TokenBatch batch = sampler->TrainBatch(step);
    optimizer->zero_grad();
    model.PrepareStep();
    torch::Tensor loss =
        model.Loss(ToTensor(batch.inputs, batch_size, length),
                   ToTensor(batch.targets, batch_size, length));
    const double loss_value = loss.item<double>();
    if (!std::isfinite(loss_value)) {
      return absl::InternalError(absl::StrCat(
          "training loss is ", loss_value, " at step ", step, " (lr ", lr,
          "); lower optimizer.learning_rate or check the data"));
    }
    loss.backward();
    model.AdjustGradients();
    double grad_norm = 0;
    if (clip > 0) {
      grad_norm = torch::nn::utils::clip_grad_norm_(parameters, clip);
    } else {
      torch::NoGradGuard no_grad;
      for (const auto& p : parameters) {
        if (p.grad().defined())
          grad_norm += p.grad().pow(2).sum().item<double>();
      }
      grad_norm = std::sqrt(grad_norm);
    }
    optimizer->step();
    state.step = step + 1;

    const bool last = state.step == budget.steps;
    std::string validation_field;
    if (last || (eval_every > 0 && state.step % eval_every == 0)) {
      validation_loss =
          MeanCrossEntropy(model, *validation_sampler, eval_batches);
      validation_field = absl::StrFormat("%.6f", validation_loss);
    }
    absl::StrAppendFormat(&state.log_csv, "%d,%d,%.6e,%.6f,%.6f,%s\n",
                          state.step, state.step * tokens_per_step, lr,
                          loss_value, grad_norm, validation_field);

    const auto now = Clock::now();
    const double elapsed =
        std::chrono::duration<double>(now - start_time).count();
    if (last || !validation_field.empty() ||
        std::chrono::duration<double>(now - last_progress).count() >=
            options.progress_every_seconds) {
      last_progress = now;
      const double steps_done = static_cast<double>(state.step - first_step);
      const double tokens_per_second = steps_done * tokens_per_step / elapsed;
      std::fprintf(
          stderr,
          "train: step %lld/%lld loss %.4f%s lr %.2e | %.0f tok/s | ETA %s\n",
          static_cast<long long>(state.step),
          static_cast<long long>(budget.steps), loss_value,
          validation_field.empty()
              ? ""
              : absl::StrCat(" val ", validation_field).c_str(),
          lr, tokens_per_second,
          FormatDuration(elapsed / steps_done * (budget.steps - state.step))
              .c_str());
    }
    if (!last && checkpoint_every > 0 && state.step % checkpoint_every == 0) {
      if (absl::Status saved = layers::SaveCheckpoint(
              options.checkpoint_path, model, optimizer.get(), state);
          !saved.ok()) {
        return saved;
      }
    }
  }
  const double wall =
      std::chrono::duration<double>(Clock::now() - start_time).count();
  if (std::isnan(validation_loss)) {  // Resumed at the very end.
    validation_loss =
        MeanCrossEntropy(model, *validation_sampler, eval_batches);
  }

  TrainingSummary summary =
      RunSummary(config, config_text, state.step, first_step, tokens_per_step,
                 forward_flops, wall, budget.stopped_by, state.log_csv,
                 (*train_shards)->manifest().SerializeAsString());
  summary.set_objective("next_token_cross_entropy");
  summary.set_parameters(model.ParameterCount());
  summary.set_unembedding_flops_per_token(model.ForwardFlopsPerToken(length) -
                                          forward_flops);
  summary.set_validation_loss(validation_loss);
  summary.set_validation_perplexity(std::exp(validation_loss));

  if (config.eval().sample_tokens() > 0) {
    const datasets::TokenBatch prompt_batch =
        validation_sampler->EvalBatch(0, 1);
    std::vector<int64_t> prompt(
        prompt_batch.inputs.begin(),
        prompt_batch.inputs.begin() + std::min(16, length));
    layers::SamplingOptions sampling;
    sampling.new_tokens = config.eval().sample_tokens();
    sampling.temperature = config.eval().temperature();
    sampling.top_p = config.eval().top_p();
    sampling.seed = config.runtime().seed();
    const std::vector<int64_t> sample = layers::Sample(model, prompt, sampling);
    for (int64_t id : prompt) summary.add_sample_prompt_ids(id);
    for (int64_t id : sample) summary.add_sample_ids(id);
    if (!options.tokenizer_path.empty()) {
      std::string error;
      auto tokenizer =
          datasets::Tokenizer::Load(options.tokenizer_path, &error);
      if (tokenizer == nullptr) return absl::InvalidArgumentError(error);
      summary.set_sample_prompt_text(
          tokenizer->Decode(std::vector<int>(prompt.begin(), prompt.end())));
      summary.set_sample_text(
          tokenizer->Decode(std::vector<int>(sample.begin(), sample.end())));
    }
  }

  if (absl::Status s =
          WriteRunOutputs(options, model, optimizer.get(), state, summary);
      !s.ok()) {
    return s;
  }
  return summary;
}

absl::Status InitializeFromCheckpoint(const std::string& parent_checkpoint,
                                      layers::GptImpl& model,
                                      double upcycle_noise) {
  absl::StatusOr<layers::LoadedModel> parent =
      layers::LoadModel(parent_checkpoint);
  if (!parent.ok()) return parent.status();
  torch::NoGradGuard no_grad;
  const auto parent_parameters = parent->model->named_parameters();
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
  for (size_t i = 0;
       i < model.blocks.size() && i < parent->model->blocks.size(); ++i) {
    auto mixture = std::dynamic_pointer_cast<layers::MixtureOfExpertsImpl>(
        model.blocks[i]->ffn);
    auto dense = std::dynamic_pointer_cast<layers::DenseMlpImpl>(
        parent->model->blocks[i]->ffn);
    if (mixture && dense) {
      const std::vector<int64_t> expert = {mixture->options().d_expert,
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
