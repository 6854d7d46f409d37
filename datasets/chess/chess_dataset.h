// The chess dataset from pgn-extract's SAN-plus-FEN games: character token
// shards for training and validation (the trainer's input) and the BSP-train /
// BSP-test JSONL games with a FEN per ply (the board-state probing metrics'
// input, MoE-X arXiv:2503.07639 App. B.3). Games are assigned by their index
// in the pool: train, validation, then the BSP splits, which keep only games
// with enough '.' positions in their evaluated prefix.
#ifndef SPARSE_LAYERS_DATASETS_CHESS_CHESS_DATASET_H_
#define SPARSE_LAYERS_DATASETS_CHESS_CHESS_DATASET_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "base/common/staged_outputs.h"
#include "datasets/chess/chess.pb.h"

namespace sparse_layers::datasets::chess {

struct ChessDatasetOptions {
  std::string pgn;             // pgn-extract output (SAN with FEN comments).
  std::string games_manifest;  // generate_games' GamesManifest textproto.
  std::string out_dir;
  int64_t train_games = 0;
  int64_t validation_games = 0;
  int64_t bsp_games = 0;  // In each of BSP-train and BSP-test.
  // Characters of a BSP game that are evaluated (as Karvonen et al.'s
  // evaluation code picks them), and the '.' positions they must hold.
  int bsp_characters = 256;
  int bsp_min_dots = 20;
};

// Writes `games` as a token split in `dir`: each game's ids in kVocabulary,
// starting with its own ';' (no end-of-text id added), shards of 2^24
// tokens. Fills `summary` (name, games, characters).
absl::Status WriteChessTokenSplit(const std::string& dir,
                                  const std::string& split,
                                  const std::vector<ChessGame>& games,
                                  const std::string& source_sha256,
                                  SplitSummary* summary);

// The BSP split `split` as JSONL: the games of `pool` from `*next` on whose
// first `options.bsp_characters` characters hold at least
// `options.bsp_min_dots` '.', until `options.bsp_games` are taken; the others
// count as filtered. Advances `*next`, fills `summary`, and fails when the pool
// runs out.
absl::StatusOr<std::string> TakeBspGames(const std::string& split,
                                         const std::vector<ChessGame>& pool,
                                         size_t* next,
                                         const ChessDatasetOptions& options,
                                         SplitSummary* summary);

// Stages and writes <out_dir>/train/ and validation/ (token shards),
// bsp_train.jsonl, bsp_test.jsonl and dataset.manifest.textproto (a
// DatasetManifest) in `outputs`; the caller commits. Fails before staging
// anything when the pool holds fewer than train + validation + 2 * bsp games.
absl::Status BuildChessDataset(const ChessDatasetOptions& options,
                               StagedOutputs& outputs);

}  // namespace sparse_layers::datasets::chess

#endif  // SPARSE_LAYERS_DATASETS_CHESS_CHESS_DATASET_H_
