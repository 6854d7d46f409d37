// Optimizer step + gradient clipping alone: torch::optim::AdamW with
// torch::nn::utils::clip_grad_norm_ (the trainer's former step) against
// FlatAdamW::ClipGradNorm + Step, on the GPT's parameters (two groups, no
// decay on 1-D ones) at d=128 L=4 and d=256 L=6, V=8192. The two alternate
// --rounds times, each round timing --steps steps; prints median ms per step.
//   ./tools/bazel run --config=smoke //pipelines/train:flat_adamw_benchmark
#include <time.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <vector>

#include "absl/flags/flag.h"
#include "base/common/status_macros.h"
#include "models/gpt.h"
#include "ops/backend/torch_init.h"
#include "pipelines/train/benchmark_gpt.h"
#include "pipelines/train/flat_adamw.h"

ABSL_FLAG(int, rounds, 7, "Alternations of the two optimizers");
ABSL_FLAG(int, steps, 20, "Timed steps per optimizer per round");

namespace sparse_layers::train {
namespace {

using Clock = std::chrono::steady_clock;

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

std::vector<torch::Tensor> ModelParameters(int64_t d_model, int64_t n_layers) {
  torch::manual_seed(0);
  auto model = *layers::GptImpl::Create(BenchmarkGptOptions(d_model, n_layers));
  std::vector<torch::Tensor> parameters = model->parameters();
  for (torch::Tensor& p : parameters) {
    p.mutable_grad() = torch::randn_like(p) * 1e-2;
  }
  return parameters;
}

// Wall and process CPU (all threads) ms per call of `step`, `steps` calls:
// CPU time does not count the time other jobs on a shared machine hold the
// cores.
struct Timing {
  double wall_ms, cpu_ms;
};
double CpuMs() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}
Timing Time(const std::function<void()>& step, int steps) {
  const auto start = Clock::now();
  const double cpu_start = CpuMs();
  for (int i = 0; i < steps; ++i) step();
  return {
      std::chrono::duration<double, std::milli>(Clock::now() - start).count() /
          steps,
      (CpuMs() - cpu_start) / steps};
}

// FlatAdamW over its own copy of the parameters.
std::unique_ptr<FlatAdamW> MakeFlat(const std::vector<torch::Tensor>& params) {
  FlatAdamWGroup decayed{{}, 0.1}, not_decayed{{}, 0};
  for (const auto& p : params) {
    (p.dim() >= 2 ? decayed : not_decayed).parameters.push_back(p);
  }
  FlatAdamWOptions options;
  options.beta2 = 0.95;
  auto flat = *FlatAdamW::Create({decayed, not_decayed}, options);
  // Create attaches zeroed gradient views: the same kind of gradients.
  torch::manual_seed(1);
  torch::NoGradGuard no_grad;
  for (const auto& p : params) p.grad().normal_(0, 1e-2);
  return flat;
}

void Measure(int64_t d_model, int64_t n_layers) {
  // Separate copies, so each optimizer owns its parameters.
  std::vector<torch::Tensor> torch_parameters =
      ModelParameters(d_model, n_layers);
  int64_t count = 0;
  for (const auto& p : torch_parameters) count += p.numel();
  auto options =
      torch::optim::AdamWOptions(1e-3).betas({0.9, 0.95}).weight_decay(0.1);
  auto no_decay = options;
  no_decay.weight_decay(0);
  std::vector<torch::Tensor> decayed, not_decayed;
  for (const auto& p : torch_parameters) {
    (p.dim() >= 2 ? decayed : not_decayed).push_back(p);
  }
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(decayed,
                      std::make_unique<torch::optim::AdamWOptions>(options));
  groups.emplace_back(not_decayed,
                      std::make_unique<torch::optim::AdamWOptions>(no_decay));
  torch::optim::AdamW torch_adamw(std::move(groups), options);
  const std::vector<torch::Tensor> flat_parameters =
      ModelParameters(d_model, n_layers);
  auto flat = MakeFlat(flat_parameters);

  // Clipping: a max norm just below the last norm, so both scale
  // the gradients every step (by 0.999, far from denormals); or far above it.
  for (const bool clipping : {true, false}) {
    double norms[2] = {1e9, 1e9};
    auto max_norm = [&](int i) { return clipping ? 0.999 * norms[i] : 1e9; };
    const std::function<void()> contenders[2] = {
        [&] {
          norms[0] =
              torch::nn::utils::clip_grad_norm_(torch_parameters, max_norm(0));
          torch_adamw.step();
        },
        [&] {
          norms[1] = flat->ClipGradNorm(max_norm(1));
          flat->Step();
        }};
    const int steps = absl::GetFlag(FLAGS_steps);
    std::vector<double> wall[2], cpu[2];
    for (const auto& step : contenders) Time(step, 3);
    for (int round = 0; round < absl::GetFlag(FLAGS_rounds); ++round) {
      for (int i = 0; i < 2; ++i) {
        const Timing timing = Time(contenders[i], steps);
        wall[i].push_back(timing.wall_ms);
        cpu[i].push_back(timing.cpu_ms);
      }
    }
    std::printf(
        "d=%lld L=%lld V=8192 (%lld parameters, %zu tensors), %s; ms per step "
        "(wall / process CPU), median of %zu alternated rounds of %d steps:\n"
        "  torch::optim::AdamW + clip_grad_norm_ %.2f / %.2f\n"
        "  FlatAdamW                             %.2f / %.2f (%.2fx / %.2fx)\n",
        static_cast<long long>(d_model), static_cast<long long>(n_layers),
        static_cast<long long>(count), torch_parameters.size(),
        clipping ? "clipping" : "norm below the clip", wall[0].size(), steps,
        Median(wall[0]), Median(cpu[0]), Median(wall[1]), Median(cpu[1]),
        Median(wall[0]) / Median(wall[1]), Median(cpu[0]) / Median(cpu[1]));
    std::fflush(stdout);
  }
}

}  // namespace
}  // namespace sparse_layers::train

int main(int argc, char** argv) {
  sparse_layers::InitMain(
      argc, argv,
      "Optimizer step + clipping: torch::optim::AdamW vs FlatAdamW.");
  return sparse_layers::RunMain([]() -> absl::Status {
    RETURN_IF_ERROR(sparse_layers::FirstError(
        {sparse_layers::FlagAtLeast(FLAGS_rounds, 1),
         sparse_layers::FlagAtLeast(FLAGS_steps, 1)}));
    sparse_layers::train::Measure(128, 4);
    sparse_layers::train::Measure(256, 6);
    return absl::OkStatus();
  });
}
