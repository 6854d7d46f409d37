// saelens_fixture --out_dir=DIR: inputs for saelens_export_test. A tiny base
// model DIR/base.pt; its SAE fits on block 1's FFN output (random biases, so
// that apply_b_dec_to_input and b_enc matter): TopK DIR/sae.pt, ReLU
// DIR/relu.pt, JumpReLU DIR/jump.pt (thresholds in the pre-codes' range) and
// BatchTopK DIR/batch.pt (threshold 0.15); a Transcoder fit
// DIR/transcoder.pt; and for each SAE DIR/rows_<name>.safetensors: 64 rows y,
// the SAE's dense codes and its reconstruction y_hat in evaluation, all
// computed by the fit itself.
#include <google/protobuf/text_format.h>
#include <torch/torch.h>

#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/common/main.h"
#include "base/common/status_macros.h"
#include "models/checkpoints/checkpoint.h"
#include "models/checkpoints/saelens_import.h"
#include "models/checkpoints/safetensors.h"
#include "models/model_loader.h"
#include "models/tiny_gpt.h"
#include "ops/backend/torch_init.h"
#include "ops/core/topk.h"

ABSL_FLAG(std::string, out_dir, "", "Existing directory for the fixture");

namespace sparse_layers::layers {
namespace {

absl::Status Save(const std::string& path, GptImpl& model,
                  const config::ExperimentConfig& config) {
  CheckpointState state;
  google::protobuf::TextFormat::PrintToString(config, &state.config_text);
  return SaveCheckpoint(path, model, nullptr, state);
}

// The base model's fit with `replacement` (text format), its biases random.
absl::Status SaveFit(const std::string& path, const LoadedModel& base,
                     const std::string& replacement) {
  config::FfnReplacement spec;
  if (!google::protobuf::TextFormat::ParseFromString(replacement, &spec)) {
    return absl::InternalError("bad replacement text");
  }
  config::ExperimentConfig config;
  ASSIGN_OR_RETURN(auto model,
                   WithReplacement(base, spec, "saelens_fixture_fit", config));
  torch::NoGradGuard no_grad;
  for (auto& item : model->named_parameters()) {
    if (absl::EndsWith(item.key(), "_bias")) {
      item.value().copy_(0.1 * torch::randn_like(item.value()));
    }
    // JumpReLU thresholds inside the pre-codes' range, so some units fire.
    if (absl::EndsWith(item.key(), "log_threshold")) {
      item.value().copy_(
          torch::empty_like(item.value()).uniform_(0.02, 0.4).log());
    }
  }
  // A BatchTopK threshold of 0.15, as if from one training step.
  for (auto& item : model->named_buffers()) {
    if (absl::EndsWith(item.key(), "threshold_sum")) item.value().fill_(0.15);
    if (absl::EndsWith(item.key(), "threshold_weight")) item.value().fill_(1);
  }
  return Save(path, *model, config);
}

absl::Status Run() {
  RETURN_IF_ERROR(RequiredFlag(FLAGS_out_dir));
  const std::string dir = absl::GetFlag(FLAGS_out_dir);
  torch::manual_seed(11);
  config::ExperimentConfig config;
  config.set_name("saelens_fixture");
  *config.mutable_model() = testing::TinyModelConfig(20, 16, 2);
  config.mutable_runtime()->set_seed(5);
  ASSIGN_OR_RETURN(auto model, InitializeModel(config));
  RETURN_IF_ERROR(Save(dir + "/base.pt", *model, config));
  ASSIGN_OR_RETURN(const LoadedModel base, LoadModel(dir + "/base.pt"));
  RETURN_IF_ERROR(SaveFit(dir + "/transcoder.pt", base,
                          "ffn: 'transcoder' layer: 1 d_ffn: 48 top_k: 5"));
  const torch::Tensor y = torch::randn({64, 16});
  // Each SAE with a SAELens architecture, and its rows.
  for (const auto& [name, spec] :
       std::vector<std::pair<std::string, std::string>>{
           {"sae", "ffn: 'topk_sae' layer: 1 d_ffn: 48 top_k: 5"},
           {"relu", "ffn: 'relu_sae' layer: 1 d_ffn: 48"},
           {"jump", "ffn: 'jump_relu_sae' layer: 1 d_ffn: 48"},
           {"batch", "ffn: 'batch_topk_sae' layer: 1 d_ffn: 48 top_k: 5"}}) {
    const std::string path = absl::StrCat(dir, "/", name, ".pt");
    RETURN_IF_ERROR(SaveFit(path, base, spec + " on_output: true"));
    ASSIGN_OR_RETURN(const LoadedReplacement fit, LoadReplacement(path));
    torch::NoGradGuard no_grad;
    fit.layer->eval();  // BatchTopK infers by its threshold.
    const torch::Tensor codes =
        Densify(fit.layer->Encode(y, fit.spec.top_k()), fit.layer->units());
    const torch::Tensor y_hat = fit.layer->DecodeDense(y, codes);
    RETURN_IF_ERROR(
        WriteSafetensors(absl::StrCat(dir, "/rows_", name, ".safetensors"),
                         {{"y", y}, {"codes", codes}, {"y_hat", y_hat}}));
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace sparse_layers::layers

int main(int argc, char** argv) {
  sparse_layers::InitMain(argc, argv, "Writes saelens_export_test's inputs.");
  return sparse_layers::RunMain(sparse_layers::layers::Run);
}
