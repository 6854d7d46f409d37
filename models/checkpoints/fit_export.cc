#include "models/checkpoints/fit_export.h"

#include <google/protobuf/util/json_util.h>

#include "absl/strings/str_cat.h"
#include "base/common/digest.h"
#include "base/common/status_macros.h"
#include "models/checkpoints/safetensors.h"

namespace sparse_layers::layers {
namespace {

// Which sub-layer the fit replaces or, on_output, reconstructs.
std::string Site(const config::FfnReplacement& spec) {
  const bool attention = spec.site() == config::FfnReplacement::ATTN;
  return absl::StrCat(attention ? "attn" : "ffn",
                      spec.on_output() ? "_output" : "");
}

}  // namespace

absl::StatusOr<FitExport> DescribeFit(const LoadedReplacement& fit) {
  // A Lorsa stands in for the attention; every other fit is a sparse layer.
  const torch::nn::Module* layer = fit.layer.get();
  if (layer == nullptr) {
    const Lorsa lorsa = fit.loaded.model->LorsaReplacement();
    if (lorsa.is_empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(fit.path, " has no fitted layer to export"));
    }
    layer = lorsa.get();
  }
  FitExport result;
  for (const auto& item : layer->named_parameters(/*recurse=*/true)) {
    result.tensors[item.key()] = item.value().detach();
  }
  // State that is not trained but read at inference (BatchTopK's threshold).
  for (const auto& item : layer->named_buffers(/*recurse=*/true)) {
    result.tensors[item.key()] = item.value().detach();
  }
  const config::FfnReplacement& spec = fit.spec;
  const std::string site = Site(spec);
  const std::string prefix = absl::StrCat(
      "blocks.", spec.layer(),
      spec.site() == config::FfnReplacement::ATTN ? ".attn." : ".ffn.");
  // Replacing reads the sub-layer's input; reconstructing reads its output.
  const std::string hook_in =
      absl::StrCat(prefix, spec.on_output() ? "hook_out" : "hook_in");
  std::string replacement_json;
  if (!google::protobuf::util::MessageToJsonString(spec, &replacement_json)
           .ok()) {
    return absl::InternalError(
        absl::StrCat(fit.path, ": replacement spec not printable as JSON"));
  }
  ASSIGN_OR_RETURN(const std::string fit_sha256, Sha256OfFile(fit.path));
  result.metadata = {
      {"format", kFitExportFormat},
      {"layer_type", spec.ffn()},
      {"block", absl::StrCat(spec.layer())},
      {"site", site},
      {"hook_in", hook_in},
      {"hook_out", absl::StrCat(prefix, "hook_out")},
      {"d_model", absl::StrCat(fit.loaded.model->options().d_model)},
      {"top_k", absl::StrCat(spec.top_k())},
      {"replacement", replacement_json},
      {"fit_sha256", fit_sha256},
  };
  return result;
}

absl::StatusOr<FitExport> ExportFit(const std::string& checkpoint_path,
                                    const std::string& out_path) {
  absl::StatusOr<LoadedReplacement> fit = LoadReplacement(checkpoint_path);
  if (!fit.ok()) {
    // Not a sparse layer: maybe a Lorsa or an attention-output SAE; when it
    // is neither, the first error ("has no sparse replacement layer") says so.
    absl::StatusOr<LoadedReplacement> attention =
        LoadReplacement(checkpoint_path, FitKind::kAttentionSite);
    if (!attention.ok()) return fit.status();
    fit = std::move(attention);
  }
  ASSIGN_OR_RETURN(FitExport described, DescribeFit(*fit));
  RETURN_IF_ERROR(
      WriteSafetensors(out_path, described.tensors, described.metadata));
  return described;
}

}  // namespace sparse_layers::layers
