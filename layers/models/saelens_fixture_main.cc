// saelens_fixture --out_dir=DIR: inputs for saelens_export_test. A tiny base
// model DIR/base.pt, its TopK SAE fit on block 1's FFN output (random biases,
// so that apply_b_dec_to_input and b_enc matter) as DIR/sae.pt, a Transcoder
// fit as DIR/transcoder.pt, and DIR/rows.safetensors: 64 rows y, the SAE's
// dense codes and its reconstruction y_hat, all computed by the fit itself.
#include <google/protobuf/text_format.h>
#include <torch/torch.h>

#include <string>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "layers/backend/torch_init.h"
#include "layers/core/topk.h"
#include "layers/models/checkpoint.h"
#include "layers/models/model_loader.h"
#include "layers/models/saelens_import.h"
#include "layers/models/safetensors.h"
#include "layers/models/tiny_gpt.h"
#include "tools/common/main.h"
#include "tools/common/status_macros.h"

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
  const std::string sae = dir + "/sae.pt";
  RETURN_IF_ERROR(
      SaveFit(sae, base,
              "ffn: 'topk_sae' layer: 1 d_ffn: 48 top_k: 5 on_output: true"));
  RETURN_IF_ERROR(SaveFit(dir + "/transcoder.pt", base,
                          "ffn: 'transcoder' layer: 1 d_ffn: 48 top_k: 5"));
  ASSIGN_OR_RETURN(const LoadedReplacement fit, LoadReplacement(sae));
  torch::NoGradGuard no_grad;
  const torch::Tensor y = torch::randn({64, 16});
  const int64_t k = fit.spec.top_k();
  const torch::Tensor codes =
      Densify(fit.layer->Encode(y, k), fit.layer->units());
  const torch::Tensor y_hat = fit.layer->DecodeDense(y, codes);
  return WriteSafetensors(dir + "/rows.safetensors",
                          {{"y", y}, {"codes", codes}, {"y_hat", y_hat}});
}

}  // namespace
}  // namespace sparse_layers::layers

int main(int argc, char** argv) {
  sparse_layers::InitMain(argc, argv, "Writes saelens_export_test's inputs.");
  return sparse_layers::RunMain(sparse_layers::layers::Run);
}
