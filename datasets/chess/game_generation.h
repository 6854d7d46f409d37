// Chess games played through a UCI engine, the training and board-state
// probing data of the chess LMs (MoE-X arXiv:2503.07639 Sec. 5.1 and App.
// B.3, on Karvonen et al.'s setup, arXiv:2408.00113). Most games are uniformly
// random legal play, whose moves only a model that tracks the board can
// predict (analysis/bsp/board_tracking.h); the rest is engine play sampled
// from a softmax over MultiPV scores. Written as PGN in long algebraic
// notation; pgn-extract converts it to SAN with FENs (chess_data.bzl). Game i
// is a pure function of (seed, i): its policy, level and every choice come
// from a generator seeded by both (not Stockfish's Skill Level, whose
// generator is seeded from the clock), and the engine's tables are cleared
// before each game, so the output does not depend on the number of workers.
#ifndef SPARSE_LAYERS_DATASETS_CHESS_GAME_GENERATION_H_
#define SPARSE_LAYERS_DATASETS_CHESS_GAME_GENERATION_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "datasets/chess/chess.pb.h"
#include "datasets/chess/uci_engine.h"

namespace sparse_layers::datasets::chess {

// An engine game's strength: a search of `nodes` nodes, each move sampled
// from a softmax over the MultiPV scores at `temperature` centipawns.
struct EngineLevel {
  int nodes = 0;
  double temperature = 1.0;
};

// "nodes:temperature,..." (e.g. "64:200,256:100"), each nodes and
// temperature positive.
absl::StatusOr<std::vector<EngineLevel>> ParseEngineLevels(
    absl::string_view text);

struct GameGenerationOptions {
  std::string engine = "/usr/games/stockfish";  // UCI engine binary.
  // Per request: an engine that does not speak UCI fails instead of hanging.
  absl::Duration engine_timeout = absl::Seconds(30);
  int64_t games = 100;
  int64_t first_game = 0;  // Splits use disjoint index ranges.
  uint64_t seed = 1;
  double random_fraction = 0.8;  // Share of uniformly random legal games.
  std::vector<EngineLevel> levels = {{64, 200}, {256, 100}, {1024, 50}};
  int multipv = 4;            // Candidate moves per engine search.
  int max_opening_plies = 8;  // Engine games open with 0..this random plies.
  int max_plies = 80;         // Plies after which a game is cut.
  int workers = 2;            // Engine processes.
};

struct GeneratedGame {
  std::vector<std::string> moves;  // UCI long algebraic.
  std::string policy;  // "random" or "engine nodes N temperature T".
  bool ended = false;  // Mate or stalemate before max_plies.
};

// Game `index` of `options.seed`, played with `engine`.
absl::StatusOr<GeneratedGame> PlayGame(UciEngine& engine,
                                       const GameGenerationOptions& options,
                                       int64_t index);

// Games first_game .. first_game + games - 1, as PGN (long algebraic, Event =
// the game's index, Round = its policy) and the manifest that describes them.
struct GeneratedGames {
  std::vector<GeneratedGame> games;
  std::string pgn;
  GamesManifest manifest;
};

// Plays the games on `options.workers` engine processes.
absl::StatusOr<GeneratedGames> GenerateGames(
    const GameGenerationOptions& options);

}  // namespace sparse_layers::datasets::chess

#endif  // SPARSE_LAYERS_DATASETS_CHESS_GAME_GENERATION_H_
