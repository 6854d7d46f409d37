#include "datasets/chess/game_generation.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"

namespace sparse_layers::datasets::chess {
namespace {

// Stockfish 15.1 (tools/deps.txt): random games follow its legal-move order.
constexpr char kEngine[] = "/usr/games/stockfish";

// Short games at a cheap level, so a test plays dozens in seconds.
GameGenerationOptions SmallOptions(int64_t games, int workers) {
  GameGenerationOptions options;
  options.engine = kEngine;
  options.games = games;
  options.seed = 1;
  options.levels = {{16, 200}};
  options.multipv = 2;
  options.max_opening_plies = 2;
  options.max_plies = 4;
  options.workers = workers;
  return options;
}

TEST(ParseEngineLevelsTest, ReadsNodesAndTemperature) {
  auto levels = ParseEngineLevels("64:200,256:100,1024:50");
  ASSERT_TRUE(levels.ok()) << levels.status();
  ASSERT_EQ(levels->size(), 3u);
  EXPECT_EQ((*levels)[0].nodes, 64);
  EXPECT_EQ((*levels)[0].temperature, 200);
  EXPECT_EQ((*levels)[2].nodes, 1024);
  EXPECT_EQ((*levels)[2].temperature, 50);
  for (const char* bad :
       {"", "64", "64:", "0:10", "64:0", "64:-1", "a:1", "1:2:3", "64:200,"}) {
    EXPECT_FALSE(ParseEngineLevels(bad).ok()) << bad;
  }
}

// The numbers of the old generate_games binary at these options: which games
// are random is the first draw of each game's generator.
TEST(GenerateGamesTest, SeedOneGivesThePinnedGames) {
  auto generated = GenerateGames(SmallOptions(40, 2));
  ASSERT_TRUE(generated.ok()) << generated.status();
  const GamesManifest& manifest = generated->manifest;
  EXPECT_EQ(manifest.engine(), "Stockfish 15.1");
  EXPECT_EQ(manifest.games(), 40);
  EXPECT_EQ(manifest.random_games(), 31);
  EXPECT_EQ(manifest.engine_games(), 9);
  EXPECT_EQ(manifest.total_plies(), 160);
  ASSERT_EQ(manifest.levels_size(), 1);
  EXPECT_EQ(manifest.levels(0), "16:200");
  EXPECT_EQ(generated->games[8].policy, "engine nodes 16 temperature 200");
  EXPECT_EQ(generated->games[11].policy, "engine nodes 16 temperature 200");
  EXPECT_EQ(generated->games[0].policy, "random");
  EXPECT_EQ(absl::StrJoin(generated->games[0].moves, " "),
            "f2f3 f7f6 b1a3 d7d6");
  const std::string first_game =
      "[Event \"0\"]\n[Round \"random\"]\n[Result \"*\"]\n\n"
      "1. f2f3 f7f6 2. b1a3 d7d6 *\n\n[Event \"1\"]";
  EXPECT_EQ(generated->pgn.substr(0, first_game.size()), first_game);
}

// Game i depends on (seed, i) only: not on the workers, nor on where the
// range starts; another seed gives other games.
TEST(GenerateGamesTest, GameIDependsOnSeedAndIOnly) {
  auto one_worker = GenerateGames(SmallOptions(12, 1));
  auto three_workers = GenerateGames(SmallOptions(12, 3));
  ASSERT_TRUE(one_worker.ok()) << one_worker.status();
  ASSERT_TRUE(three_workers.ok()) << three_workers.status();
  EXPECT_EQ(one_worker->pgn, three_workers->pgn);

  GameGenerationOptions tail_options = SmallOptions(4, 2);
  tail_options.first_game = 8;
  auto tail = GenerateGames(tail_options);
  ASSERT_TRUE(tail.ok()) << tail.status();
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(tail->games[i].moves, one_worker->games[8 + i].moves) << i;
    EXPECT_EQ(tail->games[i].policy, one_worker->games[8 + i].policy) << i;
  }
  const std::string tail_start = "[Event \"8\"]\n";
  EXPECT_EQ(tail->pgn.substr(0, tail_start.size()), tail_start);

  GameGenerationOptions other_seed = SmallOptions(12, 2);
  other_seed.seed = 2;
  auto other = GenerateGames(other_seed);
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_NE(other->pgn, one_worker->pgn);
}

// Every move is legal where it is played, random and engine games run to
// max_plies unless mated, and the policies follow random_fraction.
TEST(GenerateGamesTest, MovesAreLegalAndPoliciesFollowTheFraction) {
  auto engine = UciEngine::Start(kEngine);
  ASSERT_TRUE(engine.ok()) << engine.status();
  for (const double fraction : {0.0, 1.0}) {
    GameGenerationOptions options = SmallOptions(6, 1);
    options.random_fraction = fraction;
    options.max_plies = 12;
    for (int64_t index = 0; index < options.games; ++index) {
      auto game = PlayGame(**engine, options, index);
      ASSERT_TRUE(game.ok()) << game.status();
      EXPECT_EQ(game->policy,
                fraction == 1.0 ? "random" : "engine nodes 16 temperature 200");
      EXPECT_FALSE(game->ended);
      ASSERT_EQ(game->moves.size(), 12u);
      std::vector<std::string> played;
      for (const std::string& move : game->moves) {
        auto legal = (*engine)->LegalMoves(played);
        ASSERT_TRUE(legal.ok()) << legal.status();
        EXPECT_NE(std::find(legal->begin(), legal->end(), move), legal->end())
            << move << " after " << absl::StrJoin(played, " ");
        played.push_back(move);
      }
    }
  }
}

TEST(GenerateGamesTest, AMissingEngineFails) {
  GameGenerationOptions options = SmallOptions(2, 1);
  options.engine = "/nonexistent/engine";
  EXPECT_FALSE(GenerateGames(options).ok());
}

}  // namespace
}  // namespace sparse_layers::datasets::chess
