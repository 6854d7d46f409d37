#include "models/checkpoints/saelens_export.h"

#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "base/common/digest.h"
#include "base/common/file_io.h"
#include "base/common/staged_outputs.h"
#include "base/common/status_macros.h"
#include "models/checkpoints/safetensors.h"

namespace sparse_layers::layers {
namespace {

// A JSON string literal (names and paths may hold quotes).
std::string JsonString(absl::string_view text) {
  std::string out;
  AppendJsonString(text, &out);
  return out;
}

}  // namespace

absl::StatusOr<SaeLensExport> DescribeSaeLens(const LoadedReplacement& fit) {
  const config::FfnReplacement& spec = fit.spec;
  // SAELens 6's architecture with the same forward as each of our SAEs; a
  // BatchTopK SAE infers as a JumpReLU with one threshold for every unit, as
  // SAELens saves its own (saes/batchtopk_sae.py).
  static const std::map<std::string, std::string> kArchitectures = {
      {"topk_sae", "topk"},
      {"relu_sae", "standard"},
      {"jump_relu_sae", "jumprelu"},
      {"batch_topk_sae", "jumprelu"}};
  const auto architecture = kArchitectures.find(spec.ffn());
  if (fit.layer == nullptr || architecture == kArchitectures.end()) {
    return absl::InvalidArgumentError(absl::StrCat(
        fit.path, " is a ", spec.ffn().empty() ? "lorsa" : spec.ffn(),
        " fit; SAELens has an architecture with the same forward only for "
        "topk_sae, relu_sae, jump_relu_sae and batch_topk_sae (export the "
        "others as sparse_layers.fit.v1 safetensors)"));
  }
  const auto parameters = fit.layer->named_parameters(/*recurse=*/true);
  const torch::Tensor* encoder = parameters.find("encoder");
  const torch::Tensor* encoder_bias = parameters.find("encoder_bias");
  const torch::Tensor* decoder = parameters.find("decoder");
  const torch::Tensor* output_bias = parameters.find("output_bias");
  const torch::Tensor* log_threshold = parameters.find("log_threshold");
  const bool jump = spec.ffn() == "jump_relu_sae";
  if (!encoder || !encoder_bias || !decoder || !output_bias ||
      (jump && !log_threshold) || parameters.size() != (jump ? 5u : 4u)) {
    return absl::InternalError(absl::StrCat(
        fit.path, ": a ", spec.ffn(),
        " should have exactly encoder, encoder_bias, decoder, output_bias",
        jump ? " and log_threshold" : ""));
  }
  const int64_t d_in = encoder->size(0), d_sae = encoder->size(1);
  SaeLensExport result;
  result.tensors = {
      {"W_enc", encoder->detach().to(torch::kFloat32).contiguous()},
      {"b_enc", encoder_bias->detach().to(torch::kFloat32).contiguous()},
      {"W_dec", decoder->detach().to(torch::kFloat32).contiguous()},
      {"b_dec", output_bias->detach().to(torch::kFloat32).contiguous()},
  };
  if (jump) {
    result.tensors["threshold"] =
        log_threshold->detach().exp().to(torch::kFloat32).contiguous();
  } else if (spec.ffn() == "batch_topk_sae") {
    // The inference threshold: the running mean of the smallest kept code.
    const auto buffers = fit.layer->named_buffers(/*recurse=*/true);
    const torch::Tensor* sum = buffers.find("threshold_sum");
    const torch::Tensor* weight = buffers.find("threshold_weight");
    if (!sum || !weight) {
      return absl::InternalError(absl::StrCat(
          fit.path, ": a batch_topk_sae should have its threshold buffers"));
    }
    const double w = weight->item<double>();
    result.tensors["threshold"] = torch::full(
        {d_sae}, w > 0 ? sum->item<double>() / w : 0.0, torch::kFloat32);
  }
  const bool attention = spec.site() == config::FfnReplacement::ATTN;
  const std::string hook_name = absl::StrCat(
      "blocks.", spec.layer(), attention ? ".hook_attn_out" : ".hook_mlp_out");
  const std::string our_hook = absl::StrCat(
      "blocks.", spec.layer(), attention ? ".attn" : ".ffn", ".hook_out");
  ASSIGN_OR_RETURN(const std::string fit_sha256, Sha256OfFile(fit.path));
  const config::ExperimentConfig& config = fit.loaded.config;
  result.architecture = architecture->second;
  result.cfg_json = absl::StrCat(
      "{\"architecture\": \"", architecture->second, "\", \"d_in\": ", d_in,
      ", \"d_sae\": ", d_sae,
      architecture->second == "topk"
          ? absl::StrCat(", \"k\": ", spec.top_k(),
                         ", \"rescale_acts_by_decoder_norm\": false")
          : "",
      ", \"dtype\": \"float32\", \"device\": \"cpu\", "
      "\"apply_b_dec_to_input\": true, \"normalize_activations\": \"none\", "
      "\"reshape_activations\": \"none\", \"metadata\": {"
      "\"sae_lens_version\": \"",
      kSaeLensVersion, "\", \"sae_lens_training_version\": \"", kSaeLensVersion,
      "\", \"model_name\": ", JsonString(config.name()),
      ", \"hook_name\": ", JsonString(hook_name),
      ", \"hook_head_index\": null, \"context_size\": ",
      config.model().context_length(),
      ", \"sparse_layers_hook\": ", JsonString(our_hook),
      ", \"sparse_layers_layer_type\": \"", spec.ffn(),
      "\", "
      "\"sparse_layers_fit_sha256\": \"",
      fit_sha256, "\"}}\n");
  return result;
}

absl::StatusOr<SaeLensExport> ExportSaeLens(const std::string& checkpoint_path,
                                            const std::string& out_dir) {
  ASSIGN_OR_RETURN(const LoadedReplacement fit,
                   LoadReplacement(checkpoint_path));
  ASSIGN_OR_RETURN(SaeLensExport described, DescribeSaeLens(fit));
  StagedOutputs outputs;
  ASSIGN_OR_RETURN(const std::string dir, outputs.StageDirectory(out_dir));
  RETURN_IF_ERROR(
      WriteSafetensors(dir + "/sae_weights.safetensors", described.tensors));
  RETURN_IF_ERROR(WriteFileAtomically(dir + "/cfg.json", described.cfg_json));
  RETURN_IF_ERROR(outputs.Commit());
  return described;
}

}  // namespace sparse_layers::layers
