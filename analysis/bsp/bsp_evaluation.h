// One chess model's FFN hidden units as board-state-property classifiers
// (MoE-X arXiv:2503.07639 Sec. 3.1, App. B): for every block, coverage and
// board reconstruction in the paper's and the evaluation code's variants, on
// the masked-blank and masked-blank-and-initial BSP sets; l0 of the hidden
// code; for mixtures, the correlation of the router score with each expert's
// true l0 (Fig. 9). With an SAE spliced onto one block's FFN output
// (replacement.on_output), that block's SAE latents instead of its units: the
// SAE baseline of MoE-X Figs. 3 and 5. Optionally whether the model tracks the
// board at all
// (board_tracking.h): legal-move rate and loss against the uniform-legal-move
// floor, one row per game policy.
#ifndef SPARSE_LAYERS_ANALYSIS_BSP_BSP_EVALUATION_H_
#define SPARSE_LAYERS_ANALYSIS_BSP_BSP_EVALUATION_H_

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "analysis/bsp/chess_board.h"
#include "datasets/chess/chess_games.h"
#include "models/gpt.h"

namespace sparse_layers::analysis {

// The block the paper reads, as the same share of the depth: layer 6 of 8
// (MoE-X Sec. 3.1; App. A Fig. 11), 0-indexed; block 2 of a 4-block model.
int HeadlineBlock(int n_layers);

// What one pass over a BSP split collects, per block read: the FFN hidden
// code at the evaluated '.' positions (EvaluatedDots), each unit's largest
// |activation| over every position and the summed count of active units (the
// whole code is never kept: at paper scale a mixture's 8 blocks x 16,384 units
// x 256k positions would be about 270 GB), a mixture's router scores and each
// expert's active units per token (MoE-X Fig. 9); and the board each
// evaluated '.' sees. With an output SAE only its block is read; the other
// blocks' entries stay empty.
struct BspFeatures {
  std::vector<std::vector<torch::Tensor>> at_dots;
  std::vector<torch::Tensor> maxima;  // (units,) float, per block.
  std::vector<double> active_units;   // Summed over every position.
  int64_t positions = 0;              // Characters run, all games.
  std::vector<std::vector<torch::Tensor>> router_scores, expert_l0;  // (n, M)
  std::vector<ChessBoard> boards;
};

// The block whose FFN output an SAE of `model` reconstructs
// (replacement.on_output at an FFN site), or -1 when it has none.
int OutputSaeBlock(const layers::GptImpl& model);

// Runs each game's first `characters` characters through `model` once. At
// OutputSaeBlock(model) the collected code is the SAE's latents.
absl::StatusOr<BspFeatures> CollectBspFeatures(
    layers::GptImpl& model,
    const std::vector<datasets::chess::ChessGame>& games, int characters);

struct BspEvaluationOptions {
  std::string model_name;  // The `model` column of every row.
  // Share of its training the model has had, in percent: the
  // `training_percent` column (MoE-X, arXiv:2503.07639 Fig. 10, metrics over
  // training; 0 for a random initialisation, 100 for a finished run).
  int training_percent = 100;
  int characters = 256;  // Of each game run through the model.
  bool board_tracking = false;
  int board_tracking_games = 50;  // The first BSP-test games read for it.
};

struct BspTables {
  // One row per (block, BSP set); with an output SAE, of its block only (the
  // `ffn` column then names the SAE, `features` its latents).
  std::string coverage;
  std::string board_tracking;  // One row per game policy; empty unless asked.
  // One row per (block, expert) of a mixture: the expert's mean router score
  // and mean active units per token on the BSP-train positions (MoE-X Fig. 9's
  // points); the header alone for a model without a mixture.
  std::string router_experts;
};

// `seed` is the model's runtime.seed: every row's `seed` column (the claims
// engine pairs seeds) and the board-tracking sampling seed. Progress and
// both tables go to stderr as well.
absl::StatusOr<BspTables> EvaluateBsp(
    layers::GptImpl& model, uint64_t seed,
    const std::vector<datasets::chess::ChessGame>& bsp_train,
    const std::vector<datasets::chess::ChessGame>& bsp_test,
    const BspEvaluationOptions& options);

}  // namespace sparse_layers::analysis

#endif  // SPARSE_LAYERS_ANALYSIS_BSP_BSP_EVALUATION_H_
