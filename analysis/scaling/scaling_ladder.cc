#include "analysis/scaling/scaling_ladder.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace sparse_layers::analysis {

absl::StatusOr<Ladder> ParseLadder(absl::string_view name) {
  if (name == "paper") return Ladder::kPaper;
  if (name == "tiny") return Ladder::kTiny;
  return absl::InvalidArgumentError(
      absl::StrCat("ladder '", name, "': use paper or tiny"));
}

const std::vector<std::string>& LadderFfnTypes() {
  static const auto* types = new std::vector<std::string>{
      "mlp",          "swiglu",        "moe",
      "peer",         "sgatlin",       "sgatlin_relu",
      "sgatlin_gelu", "sgatlin_swish", "sgatlin_peer_router"};
  return *types;
}

absl::StatusOr<config::ModelConfig> LadderModel(Ladder ladder,
                                                absl::string_view ffn_type,
                                                int scale, int vocab_size,
                                                int context_length) {
  const bool paper = ladder == Ladder::kPaper;
  // The tiny ladder starts one rung below Listing 2's smallest shape (d = 32,
  // one layer) so that cpu budgets can place an isoflop optimum inside the
  // sweep (arXiv:2606.07414 Sec. 3.1, Fig. 3 has its minima inside each
  // window).
  const int smallest = paper ? 1 : 0;
  if (scale < smallest) {
    return absl::InvalidArgumentError(
        absl::StrCat("scale must be >= ", smallest, " on this ladder"));
  }
  // The tiny ladder takes half-steps: odd rungs widen, even rungs deepen
  // (s = 0: d = 32, 1 layer; 1: 64, 1; 2: 64, 2; 3: 96, 2), so counted FLOPs
  // grow about 2-3x a rung and a cpu budget's optimum can fall between the
  // rungs of Listing 2's shape (d and depth together, 8x at the bottom).
  const int d = paper ? 128 * scale : 32 * (1 + (scale + 1) / 2);
  const int n_layers = paper ? 2 * scale : 1 + scale / 2;
  const int head_dim = paper ? 64 : 32;
  // Dense width int(8/3 d / unit) unit (Listing 2's rounding to 256; 32 tiny).
  const int unit = paper ? 256 : 32;
  const int dense_width = static_cast<int>(8.0 / 3.0 * d / unit) * unit;
  const int channels = paper ? 16 : 8;
  // Tiny: (8 + d / 4)^2 sgatlin and (16 + d / 2)^2 PEER neurons, Listing 2's
  // growth of the side with the width, halved.
  const int sgatlin_side = paper ? 16 + 12 * scale : 8 + d / 4;
  const int peer_side = paper ? 32 + 24 * scale : 16 + d / 2;

  config::ModelConfig model;
  model.set_architecture("gpt");
  model.set_vocab_size(vocab_size);
  model.set_context_length(context_length);
  model.set_d_model(d);
  model.set_n_layers(n_layers);
  model.set_n_heads(d / head_dim);
  model.set_positions(config::ModelConfig::ROTARY);
  model.set_norm(config::ModelConfig::RMS_NORM);
  model.set_tie_embeddings(true);
  model.set_qk_norm(true);
  if (ffn_type == "mlp" || ffn_type == "swiglu") {
    model.set_ffn(ffn_type == "mlp" ? "gelu_mlp" : "gpt_oss_glu");
    model.set_d_ffn(dense_width);
  } else if (ffn_type == "moe") {
    model.set_ffn("gpt_oss_moe");
    model.set_d_ffn(d);  // "following GPT-OSS" (3.3).
    model.set_n_experts(16);
    model.set_top_k(2);
  } else if (ffn_type == "peer" || absl::StartsWith(ffn_type, "sgatlin")) {
    const bool peer = ffn_type == "peer";
    if (!peer && ffn_type != "sgatlin" && ffn_type != "sgatlin_relu" &&
        ffn_type != "sgatlin_gelu" && ffn_type != "sgatlin_swish" &&
        ffn_type != "sgatlin_peer_router") {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown ladder FFN type '", ffn_type, "'"));
    }
    const int side = peer ? peer_side : sgatlin_side;
    model.set_ffn(std::string(ffn_type));
    model.set_d_ffn(side * side);
    model.set_n_experts(channels);
    model.set_top_k(8);
    model.set_d_key(paper ? 128 : 32);
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown ladder FFN type '", ffn_type, "'"));
  }
  return model;
}

}  // namespace sparse_layers::analysis
