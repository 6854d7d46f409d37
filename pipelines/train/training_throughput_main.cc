// training_throughput: training tokens/s of the project's GPT (the trainer's
// step: forward, backward, clipping, AdamW) on random tokens, with model-FLOP
// utilisation against a measured 2-thread matmul peak. One line per size,
// comparable with pytorch_eager_throughput.py (same model, same sizes).
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_format.h"
#include "base/common/status_macros.h"
#include "config/config_loader.h"
#include "models/gpt.h"
#include "ops/backend/torch_init.h"
#include "pipelines/train/benchmark_gpt.h"
#include "pipelines/train/flat_adamw.h"
#include "pipelines/train/op_profile.h"

ABSL_FLAG(int, steps, 10, "Timed steps per size (after 3 warm-up steps)");
ABSL_FLAG(int, batch_size, 16, "Sequences per step");
ABSL_FLAG(bool, profile, false,
          "Also print one step's self time per ATen operator");
// Every block's FFN; pytorch_eager_ffns.py has an eager reference of the
// sparse ones benchmark_vs_pytorch compares (switch, moe_x, gpt_oss_moe,
// sgatlin, peer, mohd_swiglu).
ABSL_FLAG(std::string, ffn, "gelu_mlp",
          "Registry name of every block's FFN (switch, moe_x, sgatlin, peer, "
          "mxd_gelu, ...)");
ABSL_FLAG(int64_t, d_ffn, 0, "FFN width (0: 4 d_model)");
ABSL_FLAG(int64_t, n_experts, 0, "Experts or channels of a sparse FFN");
ABSL_FLAG(int64_t, top_k, 0, "Active experts or units of a sparse FFN");
ABSL_FLAG(int64_t, d_key, 0, "Product-key width of sgatlin and PEER (0: 128)");
// The report's LMs are far smaller than the benchmark's sizes, so their steps
// spend a larger share outside matmuls; this measures one as it trains.
ABSL_FLAG(std::vector<std::string>, config, {},
          "Measure this experiment config's model at its batch and sequence "
          "length instead of the two benchmark sizes (later files refine "
          "earlier ones; --ffn and the shape flags are then ignored)");

namespace sparse_layers::train {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double MatmulPeakGflops() {
  const torch::Tensor a = torch::randn({1024, 1024});
  const torch::Tensor b = torch::randn({1024, 1024});
  torch::Tensor c = torch::empty({1024, 1024});
  for (int i = 0; i < 3; ++i) torch::matmul_out(c, a, b);
  const auto start = Clock::now();
  constexpr int kRepeats = 30;
  for (int i = 0; i < kRepeats; ++i) torch::matmul_out(c, a, b);
  return 2.0 * 1024 * 1024 * 1024 * kRepeats / Seconds(start) / 1e9;
}

// The benchmark's model at one size, with the FFN flags applied.
layers::GptOptions FlagOptions(int64_t d_model, int64_t n_layers) {
  layers::GptOptions options = BenchmarkGptOptions(d_model, n_layers);
  options.ffn = absl::GetFlag(FLAGS_ffn);
  if (absl::GetFlag(FLAGS_d_ffn) > 0)
    options.d_ffn = absl::GetFlag(FLAGS_d_ffn);
  options.n_experts = absl::GetFlag(FLAGS_n_experts);
  options.top_k = absl::GetFlag(FLAGS_top_k);
  options.d_key = absl::GetFlag(FLAGS_d_key);
  return options;
}

// Times the trainer's step on random tokens of `batch` x `sequence_length`;
// prints one line starting with `label`.
absl::Status Measure(const layers::GptOptions& options, int batch,
                     int64_t sequence_length, const std::string& label,
                     double peak) {
  torch::manual_seed(0);
  ASSIGN_OR_RETURN(std::shared_ptr<layers::GptImpl> model,
                   layers::GptImpl::Create(options));
  // The trainer's optimizer: every parameter decayed, as pytorch_eager's.
  auto optimizer = *FlatAdamW::Create({{model->parameters(), 0.1}}, {});
  const torch::Tensor tokens = torch::randint(
      0, options.vocab_size, {batch, sequence_length}, torch::kLong);
  const torch::Tensor targets = torch::randint(
      0, options.vocab_size, {batch, sequence_length}, torch::kLong);
  // The first step's loss, before any update: the benchmark checks it against
  // the eager model's, which must start from the same scales.
  double initial_loss = -1;
  auto step = [&] {
    optimizer->ZeroGrad();
    torch::Tensor loss = model->Loss(tokens, targets);
    if (initial_loss < 0) initial_loss = loss.item<double>();
    loss.backward();
    optimizer->ClipGradNorm(1.0);
    optimizer->Step();
  };
  for (int i = 0; i < 3; ++i) step();
  const int steps = absl::GetFlag(FLAGS_steps);
  const auto start = Clock::now();
  for (int i = 0; i < steps; ++i) step();
  const double tokens_per_second =
      double(steps) * batch * sequence_length / Seconds(start);
  const double gflops = 3.0 * model->ForwardFlopsPerToken(sequence_length) *
                        tokens_per_second / 1e9;
  std::printf(
      "%s: %.0f tokens/s, %.1f GFLOP/s, MFU %.1f%% of %.0f GFLOP/s, initial "
      "loss %.4f\n",
      label.c_str(), tokens_per_second, gflops, 100 * gflops / peak, peak,
      initial_loss);
  if (absl::GetFlag(FLAGS_profile)) {
    std::printf("%s", FormatOpProfile(ProfileOps(step), 15).c_str());
  }
  return absl::OkStatus();
}

// The benchmark's model at one size (the line pytorch_eager_throughput.py
// prints for the same size).
absl::Status MeasureBenchmarkSize(int64_t d_model, int64_t n_layers,
                                  double peak) {
  const layers::GptOptions options = FlagOptions(d_model, n_layers);
  const std::string ffn = options.ffn == "gelu_mlp" ? "" : " " + options.ffn;
  const int batch = absl::GetFlag(FLAGS_batch_size);
  return Measure(options, batch, 256,
                 absl::StrFormat("libtorch d=%d L=%d T=256 V=8192 B=%d%s",
                                 d_model, n_layers, batch, ffn),
                 peak);
}

// The model of an experiment config, at its batch and training windows.
absl::Status MeasureConfig(const std::vector<std::string>& paths, double peak) {
  ASSIGN_OR_RETURN(const config::ExperimentConfig config,
                   config::LoadExperimentConfig(paths));
  ASSIGN_OR_RETURN(const layers::GptOptions options,
                   layers::GptOptionsFromConfig(config.model()));
  const int64_t sequence_length = config::TrainingWindowLength(config);
  const int batch = config.data().batch_size();
  return Measure(
      options, batch, sequence_length,
      absl::StrFormat("libtorch %s d=%d L=%d T=%d V=%d B=%d %s", config.name(),
                      options.d_model, options.n_layers, sequence_length,
                      options.vocab_size, batch, options.ffn),
      peak);
}

}  // namespace
}  // namespace sparse_layers::train

int main(int argc, char** argv) {
  sparse_layers::InitMain(argc, argv,
                          "Training throughput of the LibTorch GPT.");
  return sparse_layers::RunMain([]() -> absl::Status {
    RETURN_IF_ERROR(sparse_layers::FirstError(
        {sparse_layers::FlagAtLeast(FLAGS_steps, 1),
         sparse_layers::FlagAtLeast(FLAGS_batch_size, 1)}));
    const double peak = sparse_layers::train::MatmulPeakGflops();
    if (!absl::GetFlag(FLAGS_config).empty()) {
      return sparse_layers::train::MeasureConfig(absl::GetFlag(FLAGS_config),
                                                 peak);
    }
    RETURN_IF_ERROR(sparse_layers::train::MeasureBenchmarkSize(128, 4, peak));
    return sparse_layers::train::MeasureBenchmarkSize(256, 6, peak);
  });
}
