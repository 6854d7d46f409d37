// The MoHD study's design table (arXiv:2412.05644 Table 2): each variant's
// width, sub-dimensions and activated parameters, computed from its merged
// config rather than restated beside it, so the table cannot drift from what
// was trained.
#ifndef SPARSE_LAYERS_ANALYSIS_SCALING_MOHD_DESIGN_H_
#define SPARSE_LAYERS_ANALYSIS_SCALING_MOHD_DESIGN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "config/experiment.pb.h"

namespace sparse_layers::analysis {

struct MohdDesign {
  std::string variant;
  int64_t d_model = 0;
  int64_t d_ffn = 0;
  // MoHD's N sub-dimensions, K active and S shared; 0 for a dense model.
  int64_t sub_dims = 0;
  int64_t active = 0;
  int64_t shared = 0;
  // a = K D / N, the width a token activates in a MoHD attention or FFN (D
  // in a dense one; Table 5 routes one of the two).
  int64_t attention_active_width = 0;
  int64_t ffn_active_width = 0;
  // Tables 2 and 5's "# Activate" (no embeddings, routers or fusion):
  // L (a_attention 4 q + a_ffn 3 d_ff), q the attention's inner width.
  int64_t activated_parameters = 0;
};

// The design of one variant's model (attention "mohd" and FFN "mohd_*" are
// routed, others dense); an error names the variant when N does not divide
// K D or d_ffn is unset.
absl::StatusOr<MohdDesign> DesignOf(absl::string_view variant,
                                    const config::ExperimentConfig& config);

// design.csv: variant,d_model,d_ffn,sub_dims,active,shared,
// attention_active_width,ffn_active_width,activated_parameters, one row per
// design in order.
std::string DesignCsv(const std::vector<MohdDesign>& designs);

}  // namespace sparse_layers::analysis

#endif  // SPARSE_LAYERS_ANALYSIS_SCALING_MOHD_DESIGN_H_
