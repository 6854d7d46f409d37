// fit_throughput: rows/s of a replacement-layer fit (the trainer's step on an
// activation cache: a random batch of cached rows, PrepareStep, the layer's
// loss, backward, AdjustGradients, clipping, FlatAdamW), on random
// activations of the cpu experiments' shapes. One line per run, comparable
// with pytorch_eager_fits.py (same layer, shapes and parameter count):
// benchmark_fits_vs_pytorch alternates the two.
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>

#include "absl/flags/flag.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/common/status_macros.h"
#include "google/protobuf/text_format.h"
#include "layers/replacement/nmse.h"
#include "layers/replacement/sparse_replacement.h"
#include "models/gpt.h"
#include "ops/backend/torch_init.h"
#include "pipelines/train/flat_adamw.h"
#include "pipelines/train/op_profile.h"

ABSL_FLAG(std::string, fit, "transcoder",
          "transcoder, skip_transcoder, topk_sae, relu_sae, jump_relu_sae, "
          "batch_topk_sae (the SAEs on the FFN output), mxd_gelu or lorsa");
ABSL_FLAG(double, sparsity_penalty, 0.01,
          "relu_sae's L1 and jump_relu_sae's L0 penalty lambda");
ABSL_FLAG(int64_t, d_model, 128, "Width of the cached activations");
ABSL_FLAG(int64_t, width, 4096,
          "Code units: Transcoder / SAE width, MxD experts N, Lorsa OV heads");
ABSL_FLAG(int64_t, hidden, 512, "MxD hidden width H (the base FFN's)");
ABSL_FLAG(int64_t, top_k, 8, "Active units K");
ABSL_FLAG(int64_t, qk_heads, 8, "Lorsa QK heads H_QK");
ABSL_FLAG(int64_t, qk_dim, 8, "Lorsa QK width D_QK (the base head width)");
ABSL_FLAG(int64_t, window, 64, "Lorsa window length (tokens)");
ABSL_FLAG(int64_t, rows, 1024, "Rows (tokens) per step");
ABSL_FLAG(int, steps, 20, "Timed steps (after 3 warm-up steps)");
ABSL_FLAG(bool, profile, false,
          "Also print one step's self time per ATen operator");

namespace sparse_layers::train {
namespace {

using Clock = std::chrono::steady_clock;

// Rows a fit samples its batches from (a cache's training split).
constexpr int64_t kCachedRows = 65536;

// The model config an experiment fits with: a one-block base of the cached
// width and the replacement the experiments' overlays name (mxd.bzl,
// lorsa.bzl), sizes given explicitly so that both programs build the same
// layer.
std::string ModelConfigText(const std::string& fit, bool lorsa) {
  const int64_t d = absl::GetFlag(FLAGS_d_model);
  if (lorsa) {
    return absl::StrCat(
        "architecture: 'gpt' vocab_size: 256 context_length: ",
        absl::GetFlag(FLAGS_window), " d_model: ", d,
        " n_layers: 1 n_heads: ", d / absl::GetFlag(FLAGS_qk_dim),
        " d_ffn: ", 4 * d,
        " positions: ROTARY replacement { ffn: 'lorsa' site: ATTN layer: 0 "
        "d_ffn: ",
        absl::GetFlag(FLAGS_width),
        " qk_heads: ", absl::GetFlag(FLAGS_qk_heads),
        " top_k: ", absl::GetFlag(FLAGS_top_k), " }");
  }
  const bool mxd = fit == "mxd_gelu";
  // A penalty sets the penalised SAEs' sparsity; K the others'.
  const bool penalised = fit == "relu_sae" || fit == "jump_relu_sae";
  return absl::StrCat(
      "architecture: 'gpt' vocab_size: 256 context_length: 64 d_model: ", d,
      " n_layers: 1 n_heads: 4 d_ffn: ", absl::GetFlag(FLAGS_hidden),
      " replacement { ffn: '", fit, "' layer: 0 d_ffn: ",
      mxd ? absl::GetFlag(FLAGS_hidden) : absl::GetFlag(FLAGS_width),
      " n_experts: ", mxd ? absl::GetFlag(FLAGS_width) : 0,
      penalised ? absl::StrCat(" sparsity_penalty: ",
                               absl::GetFlag(FLAGS_sparsity_penalty))
                : absl::StrCat(" top_k: ", absl::GetFlag(FLAGS_top_k)),
      absl::EndsWith(fit, "_sae") ? " on_output: true" : "", " }");
}

absl::Status Measure() {
  torch::manual_seed(0);
  const std::string fit = absl::GetFlag(FLAGS_fit);
  const bool lorsa = fit == "lorsa";
  config::ModelConfig model_config;
  if (!google::protobuf::TextFormat::ParseFromString(
          ModelConfigText(fit, lorsa), &model_config)) {
    return absl::InvalidArgumentError("fit_throughput: bad model config");
  }
  ASSIGN_OR_RETURN(layers::GptOptions options,
                   layers::GptOptionsFromConfig(model_config));
  ASSIGN_OR_RETURN(std::shared_ptr<layers::GptImpl> model,
                   layers::GptImpl::Create(options));
  auto layer = std::dynamic_pointer_cast<layers::SparseReplacementImpl>(
      model->ReplacementLayer());
  layers::Lorsa lorsa_layer = model->LorsaReplacement();
  if (!layer && !lorsa_layer) {
    return absl::InvalidArgumentError(
        absl::StrCat("--fit=", fit, " is not a replacement layer"));
  }
  torch::nn::Module& fitted =
      lorsa ? static_cast<torch::nn::Module&>(*lorsa_layer) : *layer;
  std::vector<torch::Tensor> parameters = fitted.parameters();
  int64_t parameter_count = 0;
  for (const torch::Tensor& p : parameters) parameter_count += p.numel();
  // The fits' optimiser (fit.textproto of mxd_frontier and lorsa_attention):
  // no weight decay, clipping at 0.15 for Lorsa only.
  auto optimizer = *FlatAdamW::Create({{parameters, 0.0}}, {});
  const double clip = lorsa ? 0.15 : 0.0;
  const int64_t d = absl::GetFlag(FLAGS_d_model);
  const int64_t rows = absl::GetFlag(FLAGS_rows);
  const int64_t window = lorsa ? absl::GetFlag(FLAGS_window) : 1;
  const torch::Tensor cached_x = torch::randn({kCachedRows, d});
  const torch::Tensor cached_y = torch::randn({kCachedRows, d});
  const bool on_output = absl::EndsWith(fit, "_sae");
  const bool penalised = fit == "relu_sae" || fit == "jump_relu_sae";
  if (penalised) {
    // A penalised SAE's L0 falls from about half its units to the penalty's
    // level within a fit's first steps; time it there: biases shifted so each
    // unit fires on K / width of the cached rows (L0 about K).
    torch::NoGradGuard no_grad;
    auto* sae = dynamic_cast<layers::SaeImpl*>(layer.get());
    const torch::Tensor pre = sae->PreCodes(cached_y.slice(0, 0, 8192));
    const double firing =
        double(absl::GetFlag(FLAGS_top_k)) / double(absl::GetFlag(FLAGS_width));
    sae->encoder_bias.sub_(std::get<0>(pre.kthvalue(
        std::max<int64_t>(1, std::llround((1 - firing) * pre.size(0))), 0)));
  }
  fitted.train();
  auto step = [&] {
    // A batch of whole windows (Lorsa) or rows, as ActivationSet::TrainBatch.
    const int64_t units = rows / window;
    const torch::Tensor starts =
        torch::randint(0, kCachedRows / window, {units}, torch::kLong) * window;
    const torch::Tensor index =
        (starts.unsqueeze(1) + torch::arange(window, torch::kLong)).view(-1);
    const torch::Tensor x = cached_x.index_select(0, index);
    const torch::Tensor y = cached_y.index_select(0, index);
    optimizer->ZeroGrad();
    torch::Tensor loss;
    if (lorsa) {
      const torch::Tensor prediction =
          lorsa_layer->forward(x.view({units, window, d})).reshape({-1, d});
      loss = (prediction - y).square().sum() /
             (y - y.mean(0, /*keepdim=*/true)).square().sum();
    } else {
      layer->PrepareStep();
      loss = layers::NormalisedMse(
          layer->Forward(on_output ? y : x, layers::HookPoint()), y);
      const torch::Tensor penalty = layer->AuxiliaryLoss();
      if (penalty.defined()) loss = loss + penalty;
    }
    loss.backward();
    if (!lorsa) layer->AdjustGradients();
    if (clip > 0) optimizer->ClipGradNorm(clip);
    optimizer->Step();
  };
  for (int i = 0; i < 3; ++i) step();
  const int steps = absl::GetFlag(FLAGS_steps);
  const auto start = Clock::now();
  for (int i = 0; i < steps; ++i) step();
  const double seconds =
      std::chrono::duration<double>(Clock::now() - start).count();
  std::printf(
      "libtorch fit=%s d=%lld width=%lld K=%lld rows=%lld params=%lld: %.0f "
      "rows/s\n",
      fit.c_str(), static_cast<long long>(d),
      static_cast<long long>(absl::GetFlag(FLAGS_width)),
      static_cast<long long>(absl::GetFlag(FLAGS_top_k)),
      static_cast<long long>(rows / window * window),
      static_cast<long long>(parameter_count),
      double(steps) * (rows / window * window) / seconds);
  if (absl::GetFlag(FLAGS_profile)) {
    std::printf("%s", FormatOpProfile(ProfileOps(step), 15).c_str());
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace sparse_layers::train

int main(int argc, char** argv) {
  sparse_layers::InitMain(argc, argv,
                          "Training throughput of a replacement-layer fit.");
  return sparse_layers::RunMain([]() -> absl::Status {
    RETURN_IF_ERROR(sparse_layers::FirstError(
        {sparse_layers::FlagAtLeast(FLAGS_steps, 1),
         sparse_layers::FlagAtLeast(FLAGS_rows, 1),
         sparse_layers::FlagAtLeast(FLAGS_window, 1)}));
    return sparse_layers::train::Measure();
  });
}
