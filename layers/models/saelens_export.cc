#include "layers/models/saelens_export.h"

#include "absl/strings/str_cat.h"
#include "layers/models/safetensors.h"
#include "tools/common/digest.h"
#include "tools/common/file_io.h"
#include "tools/common/staged_outputs.h"
#include "tools/common/status_macros.h"

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
  if (fit.layer == nullptr || spec.ffn() != "topk_sae") {
    return absl::InvalidArgumentError(absl::StrCat(
        fit.path, " is a ", spec.ffn().empty() ? "lorsa" : spec.ffn(),
        " fit; SAELens has an architecture with the same forward only for "
        "topk_sae (export the others as sparse_layers.fit.v1 safetensors)"));
  }
  const auto parameters = fit.layer->named_parameters(/*recurse=*/true);
  const torch::Tensor* encoder = parameters.find("encoder");
  const torch::Tensor* encoder_bias = parameters.find("encoder_bias");
  const torch::Tensor* decoder = parameters.find("decoder");
  const torch::Tensor* output_bias = parameters.find("output_bias");
  if (!encoder || !encoder_bias || !decoder || !output_bias ||
      parameters.size() != 4) {
    return absl::InternalError(
        absl::StrCat(fit.path,
                     ": a topk_sae should have exactly encoder, encoder_bias, "
                     "decoder and output_bias"));
  }
  const int64_t d_in = encoder->size(0), d_sae = encoder->size(1);
  SaeLensExport result;
  result.tensors = {
      {"W_enc", encoder->detach().to(torch::kFloat32).contiguous()},
      {"b_enc", encoder_bias->detach().to(torch::kFloat32).contiguous()},
      {"W_dec", decoder->detach().to(torch::kFloat32).contiguous()},
      {"b_dec", output_bias->detach().to(torch::kFloat32).contiguous()},
  };
  const bool attention = spec.site() == config::FfnReplacement::ATTN;
  const std::string hook_name = absl::StrCat(
      "blocks.", spec.layer(), attention ? ".hook_attn_out" : ".hook_mlp_out");
  const std::string our_hook = absl::StrCat(
      "blocks.", spec.layer(), attention ? ".attn" : ".ffn", ".hook_out");
  ASSIGN_OR_RETURN(const std::string fit_sha256, Sha256OfFile(fit.path));
  const config::ExperimentConfig& config = fit.loaded.config;
  result.cfg_json = absl::StrCat(
      "{\"architecture\": \"topk\", \"d_in\": ", d_in, ", \"d_sae\": ", d_sae,
      ", \"k\": ", spec.top_k(),
      ", \"dtype\": \"float32\", \"device\": \"cpu\", "
      "\"apply_b_dec_to_input\": true, \"normalize_activations\": \"none\", "
      "\"reshape_activations\": \"none\", "
      "\"rescale_acts_by_decoder_norm\": false, \"metadata\": {"
      "\"sae_lens_version\": \"",
      kSaeLensVersion, "\", \"sae_lens_training_version\": \"", kSaeLensVersion,
      "\", \"model_name\": ", JsonString(config.name()),
      ", \"hook_name\": ", JsonString(hook_name),
      ", \"hook_head_index\": null, \"context_size\": ",
      config.model().context_length(),
      ", \"sparse_layers_hook\": ", JsonString(our_hook),
      ", \"sparse_layers_layer_type\": \"topk_sae\", "
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
