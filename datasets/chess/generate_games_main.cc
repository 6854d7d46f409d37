// generate_games: chess games played through a UCI engine, written as PGN in
// long algebraic notation (pgn-extract converts them to SAN and adds FENs)
// with a GamesManifest, from datasets/chess/game_generation.h (MoE-X
// arXiv:2503.07639 Sec. 5.1). Game i depends on (seed, i) only, not on
// --workers.
//
//   generate_games --engine=/usr/games/stockfish --games=450 --seed=1
//       --out=games.lalg.pgn --manifest=games.manifest.textproto
#include <cstdint>
#include <string>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "base/common/main.h"
#include "base/common/staged_outputs.h"
#include "base/common/status_macros.h"
#include "datasets/chess/game_generation.h"
#include "google/protobuf/text_format.h"

ABSL_FLAG(std::string, engine, "/usr/games/stockfish", "UCI engine binary.");
ABSL_FLAG(double, engine_timeout_seconds, 30,
          "Seconds the engine may take to answer one request before the run "
          "fails (an engine that does not speak UCI would hang it).");
ABSL_FLAG(int64_t, games, 100, "Games to generate.");
ABSL_FLAG(int64_t, first_game, 0,
          "Index of the first game (splits use "
          "disjoint index ranges).");
ABSL_FLAG(uint64_t, seed, 1, "Seed; game i depends on (seed, i) only.");
ABSL_FLAG(double, random_fraction, 0.8,
          "Share of uniformly random legal games; the rest is engine play.");
ABSL_FLAG(std::string, levels, "64:200,256:100,1024:50",
          "Engine levels, nodes:temperature_centipawns, comma separated; an "
          "engine game samples one, then each move from a softmax over the "
          "MultiPV scores at that temperature.");
ABSL_FLAG(int, multipv, 4, "Candidate moves per engine search.");
ABSL_FLAG(int, max_opening_plies, 8,
          "Engine games open with 0..this many random plies.");
ABSL_FLAG(int, max_plies, 80, "Plies after which a game is cut.");
ABSL_FLAG(int, workers, 2, "Engine processes.");
ABSL_FLAG(std::string, out, "", "Output PGN (long algebraic).");
ABSL_FLAG(std::string, manifest, "", "Output GamesManifest textproto.");

namespace sparse_layers::datasets::chess {
namespace {

absl::Status Run() {
  RETURN_IF_ERROR(FirstError(
      {RequiredFlag(FLAGS_engine), RequiredFlag(FLAGS_out),
       RequiredFlag(FLAGS_manifest), FlagAtLeast(FLAGS_games, 0),
       FlagAtLeast(FLAGS_first_game, 0),
       FlagInRange(FLAGS_random_fraction, 0.0, 1.0),
       FlagAtLeast(FLAGS_multipv, 1), FlagAtLeast(FLAGS_max_opening_plies, 0),
       FlagAtLeast(FLAGS_max_plies, 1), FlagInRange(FLAGS_workers, 1, 256),
       FlagInRange(FLAGS_engine_timeout_seconds, 0.001, 86400.0)}));
  GameGenerationOptions options;
  ASSIGN_OR_RETURN(options.levels,
                   ParseEngineLevels(absl::GetFlag(FLAGS_levels)));
  options.engine = absl::GetFlag(FLAGS_engine);
  options.engine_timeout =
      absl::Seconds(absl::GetFlag(FLAGS_engine_timeout_seconds));
  options.games = absl::GetFlag(FLAGS_games);
  options.first_game = absl::GetFlag(FLAGS_first_game);
  options.seed = absl::GetFlag(FLAGS_seed);
  options.random_fraction = absl::GetFlag(FLAGS_random_fraction);
  options.multipv = absl::GetFlag(FLAGS_multipv);
  options.max_opening_plies = absl::GetFlag(FLAGS_max_opening_plies);
  options.max_plies = absl::GetFlag(FLAGS_max_plies);
  options.workers = absl::GetFlag(FLAGS_workers);
  // Both outputs are locked and checked before the games are played.
  StagedOutputs outputs;
  const std::string pgn_path = absl::GetFlag(FLAGS_out),
                    manifest_path = absl::GetFlag(FLAGS_manifest);
  RETURN_IF_ERROR(outputs.StageFile(pgn_path).status());
  RETURN_IF_ERROR(outputs.StageFile(manifest_path).status());
  ASSIGN_OR_RETURN(const GeneratedGames games, GenerateGames(options));
  std::string manifest_text;
  google::protobuf::TextFormat::PrintToString(games.manifest, &manifest_text);
  RETURN_IF_ERROR(outputs.WriteFile(pgn_path, games.pgn));
  RETURN_IF_ERROR(outputs.WriteFile(manifest_path, manifest_text));
  return outputs.Commit();
}

}  // namespace
}  // namespace sparse_layers::datasets::chess

int main(int argc, char** argv) {
  sparse_layers::ParseMainFlags(
      argc, argv,
      "generate_games --engine=/usr/games/stockfish --games=N --out=F.pgn "
      "--manifest=F.textproto");
  return sparse_layers::RunMain(sparse_layers::datasets::chess::Run);
}
