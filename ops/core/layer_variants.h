// Switches between a paper's text and its official code, and the papers'
// ablations, for every layer family (config model.layer_options;
// experiment.proto gives each default).
#ifndef SPARSE_LAYERS_OPS_CORE_LAYER_VARIANTS_H_
#define SPARSE_LAYERS_OPS_CORE_LAYER_VARIANTS_H_

#include <cstdint>
#include <optional>
#include <string>

#include "config/experiment.pb.h"

namespace sparse_layers::layers {

struct LayerVariants {
  // Unit-norm decoder rows re-applied every step (norm_dec in the MxD authors'
  // released code); unset: each layer's default (on, off for the Skip
  // Transcoder's zero decoder).
  std::optional<bool> normalise_decoder;
  // Random-K training of replacement layers (MxD, arXiv:2505.21364 App. C.2).
  bool random_k = false;
  // MoE-X router sigma_h read as the variance printed in arXiv:2503.07639
  // Sec. 4.3.2 (default: the standard deviation).
  bool router_sigma_is_variance = false;
  double load_balance_weight = 0.001;  // Switch / MoE lambda.
  // MoHD: activation scaling, group fusion, random routing, shared sub-dims
  // (-1: K - 1), beta, gather-sparse compute.
  config::LayerOptions::MohdScaling mohd_scaling = config::LayerOptions::RENORM;
  bool mohd_fusion = true;
  bool mohd_random_routing = false;
  int64_t mohd_shared = -1;
  double mohd_balance_weight = 0.01;
  bool gather_sparse = false;
};

}  // namespace sparse_layers::layers

#endif  // SPARSE_LAYERS_OPS_CORE_LAYER_VARIANTS_H_
