#include "datasets/chess/game_generation.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <random>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/common/status_macros.h"

namespace sparse_layers::datasets::chess {

absl::StatusOr<std::vector<EngineLevel>> ParseEngineLevels(
    absl::string_view text) {
  std::vector<EngineLevel> levels;
  for (absl::string_view entry : absl::StrSplit(text, ',')) {
    std::vector<std::string> parts = absl::StrSplit(entry, ':');
    EngineLevel level;
    if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &level.nodes) ||
        !absl::SimpleAtod(parts[1], &level.temperature) || level.nodes <= 0 ||
        level.temperature <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--levels entry '", entry, "': use nodes:temperature"));
    }
    levels.push_back(level);
  }
  return levels;
}

absl::StatusOr<GeneratedGame> PlayGame(UciEngine& engine,
                                       const GameGenerationOptions& options,
                                       int64_t index) {
  if (options.levels.empty()) {
    return absl::InvalidArgumentError("no engine levels");
  }
  // splitmix-style mixing so neighbouring indices get unrelated streams.
  std::seed_seq seq{static_cast<uint64_t>(options.seed),
                    static_cast<uint64_t>(index), uint64_t{0x9E3779B97F4A7C15}};
  std::mt19937_64 rng(seq);
  auto uniform = [&rng] { return (rng() >> 11) * (1.0 / 9007199254740992.0); };
  GeneratedGame game;
  // The draws below come in a fixed order: changing it changes every game.
  const bool random = uniform() < options.random_fraction;
  const EngineLevel level = options.levels[rng() % options.levels.size()];
  const int opening =
      random ? options.max_plies
             : static_cast<int>(rng() % (options.max_opening_plies + 1));
  game.policy = random ? "random"
                       : absl::StrCat("engine nodes ", level.nodes,
                                      " temperature ", level.temperature);
  RETURN_IF_ERROR(engine.NewGame());
  while (static_cast<int>(game.moves.size()) < options.max_plies) {
    if (static_cast<int>(game.moves.size()) < opening) {
      ASSIGN_OR_RETURN(const std::vector<std::string> legal,
                       engine.LegalMoves(game.moves));
      if (legal.empty()) {
        game.ended = true;
        break;
      }
      game.moves.push_back(legal[rng() % legal.size()]);
      continue;
    }
    ASSIGN_OR_RETURN(const std::vector<ScoredMove> scored,
                     engine.Search(game.moves, level.nodes, options.multipv));
    if (scored.empty()) {
      game.ended = true;
      break;
    }
    // Softmax over centipawns / T; the best line's score is subtracted first.
    std::vector<double> weights;
    double total = 0;
    for (const ScoredMove& move : scored) {
      weights.push_back(std::exp((move.centipawns - scored[0].centipawns) /
                                 level.temperature));
      total += weights.back();
    }
    double pick = uniform() * total;
    size_t chosen = 0;
    while (chosen + 1 < weights.size() && pick >= weights[chosen]) {
      pick -= weights[chosen++];
    }
    // An engine's illegal answer would be ignored by its next "position"
    // command and stall it: refuse it here, naming the move and the game.
    ASSIGN_OR_RETURN(const std::vector<std::string> legal,
                     engine.LegalMoves(game.moves));
    if (std::find(legal.begin(), legal.end(), scored[chosen].move) ==
        legal.end()) {
      return absl::DataLossError(absl::StrCat(
          "the UCI engine answered '", scored[chosen].move,
          "', not a legal move after ", game.moves.size(), " plies (",
          game.moves.empty() ? "the start position"
                             : absl::StrJoin(game.moves, " "),
          ")"));
    }
    game.moves.push_back(scored[chosen].move);
  }
  return game;
}

namespace {

// Plays every game, each worker taking the next unplayed index, and returns
// the first worker's engine name.
absl::StatusOr<std::string> PlayGames(const GameGenerationOptions& options,
                                      std::vector<GeneratedGame>& games) {
  std::atomic<int64_t> next{0};
  std::vector<absl::Status> errors(options.workers);
  std::string engine_name;
  std::vector<std::thread> workers;
  for (int w = 0; w < options.workers; ++w) {
    workers.emplace_back([&, w] {
      auto engine = UciEngine::Start(options.engine, options.engine_timeout);
      if (!engine.ok()) {
        errors[w] = engine.status();
        return;
      }
      if (w == 0) engine_name = (*engine)->name();
      for (int64_t i = next++; i < options.games; i = next++) {
        auto game = PlayGame(**engine, options, options.first_game + i);
        if (!game.ok()) {
          errors[w] = game.status();
          return;
        }
        games[i] = *std::move(game);
      }
    });
  }
  for (std::thread& worker : workers) worker.join();
  for (const absl::Status& error : errors) RETURN_IF_ERROR(error);
  return engine_name;
}

}  // namespace

absl::StatusOr<GeneratedGames> GenerateGames(
    const GameGenerationOptions& options) {
  if (options.games < 0 || options.workers < 1) {
    return absl::InvalidArgumentError("need games >= 0 and workers >= 1");
  }
  GeneratedGames out;
  out.games.resize(options.games);
  ASSIGN_OR_RETURN(const std::string engine_name,
                   PlayGames(options, out.games));
  GamesManifest& manifest = out.manifest;
  manifest.set_engine(engine_name);
  manifest.set_engine_path(options.engine);
  manifest.set_seed(options.seed);
  manifest.set_games(options.games);
  manifest.set_max_plies(options.max_plies);
  manifest.set_max_opening_plies(options.max_opening_plies);
  for (const EngineLevel& level : options.levels) {
    manifest.add_levels(absl::StrCat(level.nodes, ":", level.temperature));
  }
  for (int64_t i = 0; i < options.games; ++i) {
    const GeneratedGame& game = out.games[i];
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
    // pgn-extract reads the moves; Event and Round carry the index and policy
    // through to the BSP splits.
    absl::StrAppend(&out.pgn, "[Event \"", options.first_game + i,
                    "\"]\n[Round \"", game.policy, "\"]\n[Result \"*\"]\n\n");
    for (size_t ply = 0; ply < game.moves.size(); ++ply) {
      if (ply % 2 == 0) absl::StrAppend(&out.pgn, ply / 2 + 1, ". ");
      absl::StrAppend(&out.pgn, game.moves[ply], " ");
    }
    absl::StrAppend(&out.pgn, "*\n\n");
  }
  return out;
}

}  // namespace sparse_layers::datasets::chess
