// The isoflop model-size ladder of sgatlin (arXiv:2606.07414 App. B.2,
// Listing 2) and our CPU-sized version: one integer scale gives d_model, depth
// and each FFN type's width, so every type grows along the same backbone.
#ifndef SPARSE_LAYERS_ANALYSIS_SCALING_SCALING_LADDER_H_
#define SPARSE_LAYERS_ANALYSIS_SCALING_SCALING_LADDER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "config/experiment.pb.h"

namespace sparse_layers::analysis {

enum class Ladder {
  // Listing 2: d = 128 s, 2 s layers, heads of 64, C = 16, d_key = 128.
  kPaper,
  // Ours, in half-steps: d = 32 (1 + ceil(s / 2)), 1 + floor(s / 2) layers
  // (odd rungs widen, even rungs deepen; s = 2k is Listing 2's shape at d =
  // 32 (k + 1)), heads of 32, C = 8, d_key = 32; sgatlin (8 + d / 4)^2 and
  // PEER (16 + d / 2)^2 neurons; from s = 0 (d = 32, one layer).
  kTiny,
};

absl::StatusOr<Ladder> ParseLadder(absl::string_view name);

// The FFN types of the isoflop study and Table 1: mlp, swiglu (GPT-OSS clamped
// GLU), moe (GPT-OSS 16 experts, top-2), peer, sgatlin and its ablations
// sgatlin_relu, sgatlin_gelu, sgatlin_swish, sgatlin_peer_router.
const std::vector<std::string>& LadderFfnTypes();

// The model section of one ladder point: pre-norm RMSNorm GPT, rotary
// positions, QK-norm, tied embeddings (the sgatlin code's backbone, 1).
absl::StatusOr<config::ModelConfig> LadderModel(Ladder ladder,
                                                absl::string_view ffn_type,
                                                int scale, int vocab_size,
                                                int context_length);

}  // namespace sparse_layers::analysis

#endif  // SPARSE_LAYERS_ANALYSIS_SCALING_SCALING_LADDER_H_
