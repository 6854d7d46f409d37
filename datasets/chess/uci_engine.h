// A UCI chess engine (Stockfish) driven over pipes: the legal moves of a
// position (`go perft 1`) and node-limited MultiPV search, so no move
// generator is written here.
#ifndef SPARSE_LAYERS_DATASETS_CHESS_UCI_ENGINE_H_
#define SPARSE_LAYERS_DATASETS_CHESS_UCI_ENGINE_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace sparse_layers::datasets::chess {

// One line of a MultiPV search: first move and score from the mover's side
// (mate scores as +-(100000 - plies to mate)).
struct ScoredMove {
  std::string move;  // UCI long algebraic, e.g. "e2e4", "e7e8q".
  int centipawns = 0;
};

class UciEngine {
 public:
  // Starts `path` with one search thread and waits for "uciok". Every request
  // (this one included) fails after `timeout` without its answer, so an
  // engine that does not speak UCI is an error, not a hang.
  static absl::StatusOr<std::unique_ptr<UciEngine>> Start(
      const std::string& path, absl::Duration timeout = absl::Seconds(30));
  // Asks the engine to quit; kills it if it has not within a second.
  ~UciEngine();

  // The engine's `id name` line, e.g. "Stockfish 15.1".
  const std::string& name() const { return name_; }
  // Clears hash and history ("ucinewgame") so a game does not depend on the
  // games before it.
  absl::Status NewGame();
  // Legal moves after `moves` from the start position, in the engine's order.
  absl::StatusOr<std::vector<std::string>> LegalMoves(
      const std::vector<std::string>& moves);
  // The best `lines` moves by a search of `nodes` nodes; empty when the
  // position has no legal move.
  absl::StatusOr<std::vector<ScoredMove>> Search(
      const std::vector<std::string>& moves, int nodes, int lines);

 private:
  UciEngine() = default;
  absl::Status Send(const std::string& line);
  // The next line, without its end; an error after `deadline`.
  absl::StatusOr<std::string> ReadLine(absl::Time deadline);
  absl::Status SetPosition(const std::vector<std::string>& moves);

  pid_t pid_ = -1;
  int to_engine_ = -1;
  int from_engine_ = -1;
  std::string pending_;  // Read but not yet returned by ReadLine.
  absl::Duration timeout_;
  std::string path_;
  std::string name_;
  int multipv_ = 1;
};

}  // namespace sparse_layers::datasets::chess

#endif  // SPARSE_LAYERS_DATASETS_CHESS_UCI_ENGINE_H_
