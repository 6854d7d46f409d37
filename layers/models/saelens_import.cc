#include "layers/models/saelens_import.h"

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/text_format.h>
#include <google/protobuf/util/json_util.h>

#include <set>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "layers/models/checkpoint.h"
#include "layers/models/safetensors.h"
#include "tools/common/file_io.h"
#include "tools/common/status_macros.h"

namespace sparse_layers::layers {
namespace {

using google::protobuf::Struct;
using google::protobuf::Value;

absl::Status Bad(const std::string& dir, const std::string& what) {
  return absl::InvalidArgumentError(
      absl::StrCat(dir, "/cfg.json: ", what, " (a SAELens 6.x SAE directory)"));
}

absl::StatusOr<const Value*> Field(const Struct& cfg, const std::string& dir,
                                   const std::string& name,
                                   Value::KindCase kind) {
  auto it = cfg.fields().find(name);
  if (it == cfg.fields().end()) return Bad(dir, "no field " + name);
  if (it->second.kind_case() != kind)
    return Bad(dir, name + " has the wrong type");
  return &it->second;
}

absl::StatusOr<int64_t> PositiveInt(const Struct& cfg, const std::string& dir,
                                    const std::string& name) {
  ASSIGN_OR_RETURN(const Value* v, Field(cfg, dir, name, Value::kNumberValue));
  const double x = v->number_value();
  if (!(x >= 1) || x != static_cast<double>(static_cast<int64_t>(x))) {
    return Bad(dir, absl::StrCat(name, " is ", x, ", not a positive integer"));
  }
  return static_cast<int64_t>(x);
}

// A string field that must hold `expected` (absent: SAELens's default).
absl::Status Expect(const Struct& cfg, const std::string& dir,
                    const std::string& name, const std::string& expected) {
  auto it = cfg.fields().find(name);
  if (it == cfg.fields().end()) return absl::OkStatus();
  if (it->second.string_value() != expected) {
    return Bad(dir, absl::StrCat(name, " is '", it->second.string_value(),
                                 "'; only '", expected, "' imports exactly"));
  }
  return absl::OkStatus();
}

bool Flag(const Struct& cfg, const std::string& name, bool absent) {
  auto it = cfg.fields().find(name);
  return it == cfg.fields().end() ? absent : it->second.bool_value();
}

}  // namespace

absl::StatusOr<SaeLensSae> ReadSaeLens(const std::string& dir) {
  ASSIGN_OR_RETURN(const std::string text, ReadFileToString(dir + "/cfg.json"));
  Struct cfg;
  if (auto status = google::protobuf::util::JsonStringToMessage(text, &cfg);
      !status.ok()) {
    return Bad(dir, "not a JSON object");
  }
  ASSIGN_OR_RETURN(const Value* architecture,
                   Field(cfg, dir, "architecture", Value::kStringValue));
  if (architecture->string_value() != "topk") {
    return Bad(dir, absl::StrCat("architecture '", architecture->string_value(),
                                 "': only 'topk' runs as our TopK SAE"));
  }
  ASSIGN_OR_RETURN(const int64_t d_in, PositiveInt(cfg, dir, "d_in"));
  ASSIGN_OR_RETURN(const int64_t d_sae, PositiveInt(cfg, dir, "d_sae"));
  ASSIGN_OR_RETURN(const int64_t k, PositiveInt(cfg, dir, "k"));
  if (k > d_sae) return Bad(dir, absl::StrCat("k ", k, " > d_sae ", d_sae));
  ASSIGN_OR_RETURN(const Value* dtype,
                   Field(cfg, dir, "dtype", Value::kStringValue));
  static const std::set<std::string> kDtypes = {
      "float32",       "float64",       "float16",       "bfloat16",
      "torch.float32", "torch.float64", "torch.float16", "torch.bfloat16"};
  if (!kDtypes.count(dtype->string_value())) {
    return Bad(dir,
               "dtype '" + dtype->string_value() + "' is not a float type");
  }
  RETURN_IF_ERROR(Expect(cfg, dir, "normalize_activations", "none"));
  RETURN_IF_ERROR(Expect(cfg, dir, "reshape_activations", "none"));
  ASSIGN_OR_RETURN(const Value* metadata,
                   Field(cfg, dir, "metadata", Value::kStructValue));
  auto hook = metadata->struct_value().fields().find("hook_name");
  if (hook == metadata->struct_value().fields().end()) {
    return Bad(dir, "metadata has no hook_name");
  }
  // blocks.<L>.hook_mlp_out or blocks.<L>.hook_attn_out.
  const std::vector<std::string> parts =
      absl::StrSplit(hook->second.string_value(), '.');
  int layer = -1;
  if (parts.size() != 3 || parts[0] != "blocks" ||
      !absl::SimpleAtoi(parts[1], &layer) || layer < 0 ||
      (parts[2] != "hook_mlp_out" && parts[2] != "hook_attn_out")) {
    return Bad(dir, "metadata.hook_name '" + hook->second.string_value() +
                        "' is not blocks.<L>.hook_mlp_out or hook_attn_out");
  }

  auto file = SafetensorsFile::Open(dir + "/sae_weights.safetensors");
  if (!file.ok()) return file.status();
  const std::map<std::string, std::vector<int64_t>> shapes = {
      {"W_enc", {d_in, d_sae}},
      {"b_enc", {d_sae}},
      {"W_dec", {d_sae, d_in}},
      {"b_dec", {d_in}}};
  std::map<std::string, torch::Tensor> w;
  for (const auto& [name, shape] : shapes) {
    ASSIGN_OR_RETURN(w[name], (*file)->ReadFloat(name, shape));
  }
  const std::vector<std::string> names = (*file)->Names();
  if (names.size() != shapes.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        dir, "/sae_weights.safetensors: tensors ", absl::StrJoin(names, ", "),
        "; a topk SAE has exactly W_enc, b_enc, W_dec, b_dec"));
  }
  // Folds that leave the forward unchanged (saelens_import.h).
  torch::NoGradGuard no_grad;
  if (!Flag(cfg, "apply_b_dec_to_input", true)) {
    w["b_enc"] = w["b_enc"] + torch::matmul(w["b_dec"], w["W_enc"]);
  }
  if (Flag(cfg, "rescale_acts_by_decoder_norm", false)) {
    const torch::Tensor norm = w["W_dec"].norm(2, 1).clamp_min(1e-8);
    w["W_enc"] = w["W_enc"] * norm;
    w["b_enc"] = w["b_enc"] * norm;
    w["W_dec"] = w["W_dec"] / norm.unsqueeze(1);
  }
  SaeLensSae sae;
  sae.spec.set_ffn("topk_sae");
  sae.spec.set_layer(layer);
  sae.spec.set_d_ffn(static_cast<int32_t>(d_sae));
  sae.spec.set_top_k(static_cast<int32_t>(k));
  sae.spec.set_on_output(true);
  sae.spec.set_site(parts[2] == "hook_attn_out" ? config::FfnReplacement::ATTN
                                                : config::FfnReplacement::FFN);
  sae.parameters = {{"encoder", w["W_enc"].contiguous()},
                    {"encoder_bias", w["b_enc"].contiguous()},
                    {"decoder", w["W_dec"].contiguous()},
                    {"output_bias", w["b_dec"].contiguous()}};
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
