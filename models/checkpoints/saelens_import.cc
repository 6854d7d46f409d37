#include "models/checkpoints/saelens_import.h"

#include <google/protobuf/text_format.h>

#include <limits>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/common/status_macros.h"
#include "models/checkpoints/checkpoint.h"
#include "models/checkpoints/json_config.h"
#include "models/checkpoints/safetensors.h"

namespace sparse_layers::layers {
namespace {

// A string field that must hold `expected` (absent: SAELens's default).
absl::Status Expect(const ConfigFields& cfg, const std::string& name,
                    const std::string& expected) {
  ASSIGN_OR_RETURN(const std::string value, cfg.String(name, expected));
  if (value != expected) {
    return cfg.Error(name, absl::StrCat("is '", value, "'; only '", expected,
                                        "' imports exactly"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<SaeLensSae> ReadSaeLens(const std::string& dir) {
  // Errors name cfg.json and the field; SAELens 6.x is the format read.
  const std::string path = dir + "/cfg.json";
  ASSIGN_OR_RETURN(const google::protobuf::Struct root, ReadJsonObject(path));
  const ConfigFields cfg(path, root);
  ASSIGN_OR_RETURN(const std::string architecture, cfg.String("architecture"));
  // Each SAELens architecture and our SAE with the same forward.
  static const std::map<std::string, std::string> kLayers = {
      {"topk", "topk_sae"},
      {"standard", "relu_sae"},
      {"jumprelu", "jump_relu_sae"}};
  const auto layer_type = kLayers.find(architecture);
  if (layer_type == kLayers.end()) {
    return cfg.Error("architecture",
                     absl::StrCat("is '", architecture,
                                  "': only 'topk', 'standard' and 'jumprelu' "
                                  "run as our SAEs"));
  }
  const bool topk = architecture == "topk";
  const bool jump = architecture == "jumprelu";
  ASSIGN_OR_RETURN(const int64_t d_in, cfg.PositiveInt("d_in"));
  ASSIGN_OR_RETURN(const int64_t d_sae, cfg.PositiveInt("d_sae"));
  int64_t k = 0;
  if (topk) {
    ASSIGN_OR_RETURN(k, cfg.PositiveInt("k"));
    if (k > d_sae) {
      return cfg.Error("k", absl::StrCat("is ", k, " > d_sae ", d_sae));
    }
  }
  ASSIGN_OR_RETURN(const std::string dtype, cfg.String("dtype"));
  static const std::set<std::string> kDtypes = {
      "float32",       "float64",       "float16",       "bfloat16",
      "torch.float32", "torch.float64", "torch.float16", "torch.bfloat16"};
  if (!kDtypes.count(dtype)) {
    return cfg.Error("dtype", "'" + dtype + "' is not a float type");
  }
  RETURN_IF_ERROR(Expect(cfg, "normalize_activations", "none"));
  RETURN_IF_ERROR(Expect(cfg, "reshape_activations", "none"));
  ASSIGN_OR_RETURN(const bool apply_b_dec_to_input,
                   cfg.Bool("apply_b_dec_to_input", true));
  ASSIGN_OR_RETURN(const bool rescale_acts_by_decoder_norm,
                   cfg.Bool("rescale_acts_by_decoder_norm", false));
  if (rescale_acts_by_decoder_norm && !topk) {
    return cfg.Error("rescale_acts_by_decoder_norm",
                     "is true; only a 'topk' SAE folds it");
  }
  ASSIGN_OR_RETURN(const ConfigFields metadata, cfg.Object("metadata"));
  ASSIGN_OR_RETURN(const std::string hook, metadata.String("hook_name"));
  // blocks.<L>.hook_mlp_out or blocks.<L>.hook_attn_out.
  const std::vector<std::string> parts = absl::StrSplit(hook, '.');
  int layer = -1;
  if (parts.size() != 3 || parts[0] != "blocks" ||
      !absl::SimpleAtoi(parts[1], &layer) || layer < 0 ||
      (parts[2] != "hook_mlp_out" && parts[2] != "hook_attn_out")) {
    return metadata.Error("hook_name",
                          "'" + hook +
                              "' is not blocks.<L>.hook_mlp_out or "
                              "hook_attn_out");
  }

  ASSIGN_OR_RETURN(std::unique_ptr<SafetensorsFile> file,
                   SafetensorsFile::Open(dir + "/sae_weights.safetensors"));
  std::map<std::string, std::vector<int64_t>> shapes = {
      {"W_enc", {d_in, d_sae}},
      {"b_enc", {d_sae}},
      {"W_dec", {d_sae, d_in}},
      {"b_dec", {d_in}}};
  if (jump) shapes["threshold"] = {d_sae};
  std::map<std::string, torch::Tensor> w;
  for (const auto& [name, shape] : shapes) {
    ASSIGN_OR_RETURN(w[name], file->ReadFloat(name, shape));
  }
  const std::vector<std::string> names = file->Names();
  if (names.size() != shapes.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        dir, "/sae_weights.safetensors: tensors ", absl::StrJoin(names, ", "),
        "; a ", architecture, " SAE has exactly W_enc, b_enc, W_dec, b_dec",
        jump ? ", threshold" : ""));
  }
  // Folds that leave the forward unchanged (saelens_import.h).
  torch::NoGradGuard no_grad;
  if (!apply_b_dec_to_input) {
    w["b_enc"] = w["b_enc"] + torch::matmul(w["b_dec"], w["W_enc"]);
  }
  if (rescale_acts_by_decoder_norm) {
    const torch::Tensor norm = w["W_dec"].norm(2, 1).clamp_min(1e-8);
    w["W_enc"] = w["W_enc"] * norm;
    w["b_enc"] = w["b_enc"] * norm;
    w["W_dec"] = w["W_dec"] / norm.unsqueeze(1);
  }
  SaeLensSae sae;
  sae.spec.set_ffn(layer_type->second);
  sae.spec.set_layer(layer);
  sae.spec.set_d_ffn(static_cast<int32_t>(d_sae));
  // The expansion factor our own fits record, where d_sae is a multiple of
  // d_in (d_ffn, set above, is what sizes the layer).
  if (d_sae % d_in == 0) {
    sae.spec.set_expansion(static_cast<int32_t>(d_sae / d_in));
  }
  sae.spec.set_top_k(static_cast<int32_t>(k));  // 0 (none) unless topk.
  sae.spec.set_on_output(true);
  sae.spec.set_site(parts[2] == "hook_attn_out" ? config::FfnReplacement::ATTN
                                                : config::FfnReplacement::FFN);
  sae.parameters = {{"encoder", w["W_enc"].contiguous()},
                    {"encoder_bias", w["b_enc"].contiguous()},
                    {"decoder", w["W_dec"].contiguous()},
                    {"output_bias", w["b_dec"].contiguous()}};
  if (jump) {
    if (!torch::isfinite(w["threshold"]).all().item<bool>()) {
      return absl::InvalidArgumentError(absl::StrCat(
          dir, "/sae_weights.safetensors: threshold is not finite"));
    }
    // ReLU(h) 1[h > t] keeps h > max(t, 0); the smallest positive float
    // stands in for thresholds <= 0 (log theta must be finite).
    sae.parameters["log_threshold"] =
        w["threshold"]
            .clamp_min(std::numeric_limits<float>::min())
            .log()
            .contiguous();
  }
  return sae;
}

absl::StatusOr<std::shared_ptr<GptImpl>> WithReplacement(
    const LoadedModel& base, const config::FfnReplacement& spec,
    const std::string& name, config::ExperimentConfig& config) {
  if (base.config.model().has_replacement()) {
    return absl::InvalidArgumentError(
        absl::StrCat(base.config.name(), " already has a replacement layer"));
  }
  config = base.config;
  config.set_name(name);
  *config.mutable_model()->mutable_replacement() = spec;
  ASSIGN_OR_RETURN(auto model, InitializeModel(config));
  torch::NoGradGuard no_grad;
  const auto from = base.model->named_parameters();
  for (auto& item : model->named_parameters()) {
    if (const torch::Tensor* source = from.find(item.key())) {
      item.value().copy_(*source);
    }
  }
  return model;
}

absl::Status ImportSaeLens(const std::string& dir,
                           const std::string& base_checkpoint,
                           const std::string& out) {
  ASSIGN_OR_RETURN(const SaeLensSae sae, ReadSaeLens(dir));
  ASSIGN_OR_RETURN(const LoadedModel base, LoadModel(base_checkpoint));
  const int64_t blocks = base.config.model().n_layers();
  const int64_t width = base.config.model().d_model();
  if (sae.spec.layer() >= blocks ||
      sae.parameters.at("output_bias").size(0) != width) {
    return absl::InvalidArgumentError(absl::StrCat(
        dir, ": an SAE of width ", sae.parameters.at("output_bias").size(0),
        " on block ", sae.spec.layer(), " does not fit ", base_checkpoint, " (",
        blocks, " blocks of width ", width, ")"));
  }
  config::ExperimentConfig config;
  ASSIGN_OR_RETURN(
      auto model,
      WithReplacement(base, sae.spec, base.config.name() + "_saelens", config));
  torch::NoGradGuard no_grad;
  const auto from = base.model->named_parameters();
  std::set<std::string> set;
  for (auto& item : model->named_parameters()) {
    if (from.find(item.key()) != nullptr) continue;
    const std::string leaf = item.key().substr(item.key().rfind('.') + 1);
    auto it = sae.parameters.find(leaf);
    if (it == sae.parameters.end()) {
      return absl::InternalError("unexpected replacement parameter " +
                                 item.key());
    }
    item.value().copy_(it->second);
    set.insert(leaf);
  }
  if (set.size() != sae.parameters.size()) {
    return absl::InternalError("the TopK SAE's parameters were not all found");
  }
  CheckpointState state;
  google::protobuf::TextFormat::PrintToString(config, &state.config_text);
  return SaveCheckpoint(out, *model, nullptr, state);
}

}  // namespace sparse_layers::layers
