// Board tracking of a character chess model read from its outputs (MoE-X
// arXiv:2503.07639 Sec. 5.1 trains on games whose moves only a model that
// tracks the board can predict): the rate at which its continuations of
// held-out game prefixes are legal moves, and its character loss on games of
// uniformly random legal moves against the floor a perfect board tracker
// reaches there (the entropy of a uniform choice among the legal moves).
#ifndef SPARSE_LAYERS_ANALYSIS_BSP_BOARD_TRACKING_H_
#define SPARSE_LAYERS_ANALYSIS_BSP_BOARD_TRACKING_H_

#include <torch/torch.h>

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "datasets/chess/chess.pb.h"

namespace sparse_layers::analysis {

// Where ply k's SAN lies in a game string: text[start, end).
struct PlySpan {
  int start = 0;
  int end = 0;
};

// The plies of `;1.e4 e5 2.Nf3 ...`, in order (ply k is played from fens(k)).
std::vector<PlySpan> PlySpans(absl::string_view text);

// (B, T) token ids -> (B, T, vocabulary) next-token log-probabilities.
using NextTokenLogProbs = std::function<torch::Tensor(const torch::Tensor&)>;

struct BoardTrackingOptions {
  int characters = 256;     // Window of each game read, as in the BSP study.
  int max_move_length = 8;  // Longest SAN ("exd8=Q+" has 7).
  // Plies continued per game, evenly spaced over the window's complete plies:
  // every continuation reruns its whole prefix, so this sets the cost.
  int plies_per_game = 4;
  uint64_t sampling_seed = 1;
};

// One group of games (one policy, or all of them).
struct BoardTrackingResult {
  std::string policy;
  int games = 0;
  int plies = 0;
  // Continuations of the prefix before each ply that are a legal SAN move of
  // the position, greedy and sampled at temperature 1.
  double legal_move_rate_greedy = 0;
  double legal_move_rate_sampled = 0;
  // Mean next-character loss (nats) over the characters up to the space after
  // the last complete ply, and the floor sum(log #legal moves) / characters
  // (the expected loss of a perfect board tracker on uniformly random games).
  int characters = 0;
  double loss_nats_per_character = 0;
  double uniform_legal_floor_nats_per_character = 0;
};

// Results for "all" games and for each policy ("random", engine levels
// folded into "engine"), in that order.
absl::StatusOr<std::vector<BoardTrackingResult>> EvaluateBoardTracking(
    const std::vector<datasets::chess::ChessGame>& games,
    const NextTokenLogProbs& log_probs, const BoardTrackingOptions& options);

}  // namespace sparse_layers::analysis

#endif  // SPARSE_LAYERS_ANALYSIS_BSP_BOARD_TRACKING_H_
