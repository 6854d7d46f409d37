#include "analysis/scaling/mohd_design.h"

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace sparse_layers::analysis {

absl::StatusOr<MohdDesign> DesignOf(absl::string_view variant,
                                    const config::ExperimentConfig& config) {
  const config::ModelConfig& model = config.model();
  MohdDesign design;
  design.variant = std::string(variant);
  design.d_model = model.d_model();
  design.d_ffn = model.d_ffn();
  if (design.d_model <= 0 || design.d_ffn <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(variant,
                     ": the design needs model.d_model and "
                     "model.d_ffn set (got ",
                     design.d_model, " and ", design.d_ffn, ")"));
  }
  design.attention_active_width = design.ffn_active_width = design.d_model;
  const bool routed_attention = model.attention() == "mohd";
  const bool routed_ffn = absl::StartsWith(model.ffn(), "mohd");
  if (routed_attention || routed_ffn) {
    design.sub_dims = model.n_experts();
    design.active = model.top_k();
    design.shared = model.layer_options().mohd_shared();
    // Sec. 4.1: each of the N sub-dimensions is D / N wide; K of them fire.
    if (design.sub_dims <= 0 ||
        (design.active * design.d_model) % design.sub_dims != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          variant, ": N = ", design.sub_dims,
          " does not divide K D = ", design.active, " x ", design.d_model));
    }
    const int64_t active = design.active * design.d_model / design.sub_dims;
    if (routed_attention) design.attention_active_width = active;
    if (routed_ffn) design.ffn_active_width = active;
  }
  const int64_t inner =
      model.attention_inner() > 0 ? model.attention_inner() : design.d_model;
  design.activated_parameters = static_cast<int64_t>(model.n_layers()) *
                                (design.attention_active_width * 4 * inner +
                                 design.ffn_active_width * 3 * design.d_ffn);
  return design;
}

std::string DesignCsv(const std::vector<MohdDesign>& designs) {
  std::string csv =
      "variant,d_model,d_ffn,sub_dims,active,shared,attention_active_width,"
      "ffn_active_width,activated_parameters\n";
  for (const MohdDesign& d : designs) {
    absl::StrAppend(&csv, d.variant, ",", d.d_model, ",", d.d_ffn, ",",
                    d.sub_dims, ",", d.active, ",", d.shared, ",",
                    d.attention_active_width, ",", d.ffn_active_width, ",",
                    d.activated_parameters, "\n");
  }
  return csv;
}

}  // namespace sparse_layers::analysis
