// Generates chess games with a UCI engine and writes them as PGN in long
// algebraic notation (pgn-extract converts them to SAN and adds FENs). Game i
// is a pure function of (seed, i): random or engine play, its level and every
// choice come from a generator seeded by both, and the engine's tables are
// cleared before each game, so the output does not depend on --workers.
#include <atomic>
#include <cmath>
#include <cstdint>
#include <random>
#include <thread>

#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "datasets/chess/chess.pb.h"
#include "datasets/chess/uci_engine.h"
#include "google/protobuf/text_format.h"
#include "tools/common/file_io.h"
#include "tools/common/main.h"
#include "tools/common/staged_outputs.h"

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

struct Level {
  int nodes = 0;
  double temperature = 1.0;
};

struct Game {
  std::vector<std::string> moves;
  std::string policy;
  bool ended = false;  // Mate or stalemate.
};

absl::StatusOr<Game> PlayGame(UciEngine& engine, int64_t index,
                              const std::vector<Level>& levels) {
  // splitmix-style mixing so neighbouring indices get unrelated streams.
  std::seed_seq seq{static_cast<uint64_t>(absl::GetFlag(FLAGS_seed)),
                    static_cast<uint64_t>(index), uint64_t{0x9E3779B97F4A7C15}};
  std::mt19937_64 rng(seq);
  auto uniform = [&rng] { return (rng() >> 11) * (1.0 / 9007199254740992.0); };
  Game game;
  const bool random = uniform() < absl::GetFlag(FLAGS_random_fraction);
  const Level level = levels[rng() % levels.size()];
  const int opening =
      random ? absl::GetFlag(FLAGS_max_plies)
             : static_cast<int>(rng() %
                                (absl::GetFlag(FLAGS_max_opening_plies) + 1));
  game.policy = random ? "random"
                       : absl::StrCat("engine nodes ", level.nodes,
                                      " temperature ", level.temperature);
  if (auto s = engine.NewGame(); !s.ok()) return s;
  while (static_cast<int>(game.moves.size()) < absl::GetFlag(FLAGS_max_plies)) {
    if (static_cast<int>(game.moves.size()) < opening) {
      auto legal = engine.LegalMoves(game.moves);
      if (!legal.ok()) return legal.status();
      if (legal->empty()) {
        game.ended = true;
        break;
      }
      game.moves.push_back((*legal)[rng() % legal->size()]);
      continue;
    }
    auto scored =
        engine.Search(game.moves, level.nodes, absl::GetFlag(FLAGS_multipv));
    if (!scored.ok()) return scored.status();
    if (scored->empty()) {
      game.ended = true;
      break;
    }
    // Softmax over centipawns / T; the best line's score is subtracted first.
    std::vector<double> weights;
    double total = 0;
    for (const ScoredMove& move : *scored) {
      weights.push_back(std::exp((move.centipawns - (*scored)[0].centipawns) /
                                 level.temperature));
      total += weights.back();
    }
    double pick = uniform() * total;
    size_t chosen = 0;
    while (chosen + 1 < weights.size() && pick >= weights[chosen]) {
      pick -= weights[chosen++];
    }
    game.moves.push_back((*scored)[chosen].move);
  }
  return game;
}

absl::Status Run() {
  if (absl::Status s = FirstError(
          {RequiredFlag(FLAGS_engine), RequiredFlag(FLAGS_out),
           RequiredFlag(FLAGS_manifest), FlagAtLeast(FLAGS_games, 0),
           FlagAtLeast(FLAGS_first_game, 0),
           FlagInRange(FLAGS_random_fraction, 0.0, 1.0),
           FlagAtLeast(FLAGS_multipv, 1),
           FlagAtLeast(FLAGS_max_opening_plies, 0),
           FlagAtLeast(FLAGS_max_plies, 1), FlagInRange(FLAGS_workers, 1, 256),
           FlagInRange(FLAGS_engine_timeout_seconds, 0.001, 86400.0)});
      !s.ok()) {
    return s;
  }
  std::vector<Level> levels;
  for (absl::string_view text :
       absl::StrSplit(absl::GetFlag(FLAGS_levels), ',')) {
    std::vector<std::string> parts = absl::StrSplit(text, ':');
    Level level;
    if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &level.nodes) ||
        !absl::SimpleAtod(parts[1], &level.temperature) || level.nodes <= 0 ||
        level.temperature <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--levels entry '", text, "': use nodes:temperature"));
    }
    levels.push_back(level);
  }
  // Both outputs are locked and checked before the games are played.
  StagedOutputs outputs;
  for (const std::string& path :
       {absl::GetFlag(FLAGS_out), absl::GetFlag(FLAGS_manifest)}) {
    if (auto staged = outputs.StageFile(path); !staged.ok()) {
      return staged.status();
    }
  }
  const int64_t count = absl::GetFlag(FLAGS_games),
                first = absl::GetFlag(FLAGS_first_game);
  std::vector<Game> games(count);
  std::atomic<int64_t> next{0};
  std::vector<absl::Status> errors(absl::GetFlag(FLAGS_workers));
  std::string engine_name;
  std::vector<std::thread> workers;
  for (int w = 0; w < absl::GetFlag(FLAGS_workers); ++w) {
    workers.emplace_back([&, w] {
      auto engine = UciEngine::Start(
          absl::GetFlag(FLAGS_engine),
          absl::Seconds(absl::GetFlag(FLAGS_engine_timeout_seconds)));
      if (!engine.ok()) {
        errors[w] = engine.status();
        return;
      }
      if (w == 0) engine_name = (*engine)->name();
      for (int64_t i = next++; i < count; i = next++) {
        auto game = PlayGame(**engine, first + i, levels);
        if (!game.ok()) {
          errors[w] = game.status();
          return;
        }
        games[i] = *std::move(game);
      }
    });
  }
  for (std::thread& worker : workers) worker.join();
  for (const absl::Status& error : errors) {
    if (!error.ok()) return error;
  }

  GamesManifest manifest;
  manifest.set_engine(engine_name);
  manifest.set_engine_path(absl::GetFlag(FLAGS_engine));
  manifest.set_seed(absl::GetFlag(FLAGS_seed));
  manifest.set_games(count);
  manifest.set_max_plies(absl::GetFlag(FLAGS_max_plies));
  manifest.set_max_opening_plies(absl::GetFlag(FLAGS_max_opening_plies));
  for (const Level& level : levels) {
    manifest.add_levels(absl::StrCat(level.nodes, ":", level.temperature));
  }
  std::string pgn;
  for (int64_t i = 0; i < count; ++i) {
    const Game& game = games[i];
    if (game.policy == "random") {
      manifest.set_random_games(manifest.random_games() + 1);
    } else {
      manifest.set_engine_games(manifest.engine_games() + 1);
    }
    manifest.set_total_plies(manifest.total_plies() + game.moves.size());
    if (game.ended) {
      manifest.set_games_ended_by_mate_or_stalemate(
          manifest.games_ended_by_mate_or_stalemate() + 1);
    }
    absl::StrAppend(&pgn, "[Event \"", first + i, "\"]\n[Round \"", game.policy,
                    "\"]\n[Result \"*\"]\n\n");
    for (size_t ply = 0; ply < game.moves.size(); ++ply) {
      if (ply % 2 == 0) absl::StrAppend(&pgn, ply / 2 + 1, ". ");
      absl::StrAppend(&pgn, game.moves[ply], " ");
    }
    absl::StrAppend(&pgn, "*\n\n");
  }
  std::string manifest_text;
  google::protobuf::TextFormat::PrintToString(manifest, &manifest_text);
  if (auto s = outputs.WriteFile(absl::GetFlag(FLAGS_out), pgn); !s.ok()) {
    return s;
  }
  if (auto s = outputs.WriteFile(absl::GetFlag(FLAGS_manifest), manifest_text);
      !s.ok()) {
    return s;
  }
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
