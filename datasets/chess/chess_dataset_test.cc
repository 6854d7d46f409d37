#include "datasets/chess/chess_dataset.h"

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/common/digest.h"
#include "base/common/file_io.h"
#include "base/common/staged_outputs.h"
#include "datasets/chess/chess.pb.h"
#include "datasets/chess/chess_games.h"
#include "datasets/text/token_shards.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"

namespace sparse_layers::datasets::chess {
namespace {

// pgn-extract output: the fool's mate (";1.f3 e5 2.g4 Qh4#", 18 characters,
// two '.') and a one-move game (";1.e4", one '.').
std::string FoolsMate(int index) {
  return absl::StrCat(
      "[Event \"", index,
      "\"]\n[Site \"?\"]\n[Round \"random\"]\n[Result \"*\"]\n\n"
      "1. f3 { rnbqkbnr/pppppppp/8/8/8/5P2/PPPPP1PP/RNBQKBNR b KQkq - 0 1 } "
      "1... e5 { rnbqkbnr/pppp1ppp/8/4p3/8/5P2/PPPPP1PP/RNBQKBNR w KQkq e6 0 2 "
      "} 2. g4 { rnbqkbnr/pppp1ppp/8/4p3/6P1/5P2/PPPPP2P/RNBQKBNR b KQkq g3 0 "
      "2 } 2... Qh4# { rnb1kbnr/pppp1ppp/8/4p3/6Pq/5P2/PPPPP2P/RNBQKBNR w KQkq "
      "- 1 3 } *\n\n");
}
std::string OneMove(int index) {
  return absl::StrCat(
      "[Event \"", index,
      "\"]\n[Site \"?\"]\n[Round \"random\"]\n[Result \"*\"]\n\n"
      "1. e4 { rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq e3 0 1 } "
      "*\n\n");
}

ChessGame Game(int index, const std::string& text) {
  ChessGame game;
  game.set_index(index);
  game.set_text(text);
  game.add_fens(std::string(kInitialFen));
  return game;
}

TEST(TakeBspGamesTest, KeepsGamesWithEnoughDotsInTheirPrefix) {
  // At 8 characters ";1.e4 e5 2.d4" holds one '.', ";1.e4 2.d4" two.
  const std::vector<ChessGame> pool = {
      Game(0, ";1.e4 e5 2.d4"), Game(1, ";1.e4 2.d4"), Game(2, ";1.d4"),
      Game(3, ";1.c4 2.c5 3.Nf3"), Game(4, ";1.e4 2.d4")};
  ChessDatasetOptions options;
  options.bsp_games = 2;
  options.bsp_characters = 8;
  options.bsp_min_dots = 2;
  size_t next = 0;
  SplitSummary summary;
  auto jsonl = TakeBspGames("bsp_train", pool, &next, options, &summary);
  ASSERT_TRUE(jsonl.ok()) << jsonl.status();
  EXPECT_EQ(next, 4u);
  EXPECT_EQ(summary.name(), "bsp_train");
  EXPECT_EQ(summary.games(), 2);
  EXPECT_EQ(summary.games_filtered(), 2);
  EXPECT_EQ(summary.characters(), 10 + 16);
  auto games = ParseGamesJsonl(*jsonl);
  ASSERT_TRUE(games.ok()) << games.status();
  ASSERT_EQ(games->size(), 2u);
  EXPECT_EQ((*games)[0].index(), 1);
  EXPECT_EQ((*games)[1].index(), 3);
  // The rest of the pool holds one game: BSP-test runs out.
  SplitSummary test;
  auto ran_out = TakeBspGames("bsp_test", pool, &next, options, &test);
  EXPECT_EQ(std::string(ran_out.status().message()),
            "bsp_test: the pool ran out; generate more games for the BSP "
            "splits");
}

TEST(BuildChessDatasetTest, SplitsThePoolInIndexOrder) {
  const std::string dir = std::getenv("TEST_TMPDIR");
  // Indices 0-8 out of order; 3 and 6 are one-move games.
  std::string pgn;
  for (int index : {5, 0, 8, 3, 1, 7, 2, 6, 4}) {
    absl::StrAppend(
        &pgn, index == 3 || index == 6 ? OneMove(index) : FoolsMate(index));
  }
  ASSERT_TRUE(WriteFileAtomically(dir + "/games.san.pgn", pgn).ok());
  ASSERT_TRUE(
      WriteFileAtomically(dir + "/games.textproto", "games: 9 seed: 7\n").ok());
  ChessDatasetOptions options;
  options.pgn = dir + "/games.san.pgn";
  options.games_manifest = dir + "/games.textproto";
  options.out_dir = dir + "/chess";  // Exists, as Bazel's output directory.
  std::filesystem::create_directories(options.out_dir);
  options.train_games = 2;
  options.validation_games = 1;
  options.bsp_games = 2;
  options.bsp_min_dots = 2;
  {
    StagedOutputs outputs;
    absl::Status built = BuildChessDataset(options, outputs);
    ASSERT_TRUE(built.ok()) << built;
    ASSERT_TRUE(outputs.Commit().ok());
  }
  auto text = ReadFileToString(dir + "/chess/dataset.manifest.textproto");
  ASSERT_TRUE(text.ok());
  DatasetManifest manifest;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(*text, &manifest));
  EXPECT_EQ(manifest.vocabulary(), kVocabulary);
  EXPECT_EQ(manifest.context_characters(), 256);
  EXPECT_EQ(manifest.source_sha256(), Sha256Hex(pgn));
  EXPECT_EQ(manifest.games().games(), 9);
  EXPECT_EQ(manifest.games().seed(), 7u);
  ASSERT_EQ(manifest.splits_size(), 4);
  // train: games 0, 1; validation: 2; BSP-train: 4, 5 (3 filtered);
  // BSP-test: 7, 8 (6 filtered).
  const struct {
    const char* name;
    int64_t games, characters, filtered;
  } expected[] = {{"train", 2, 36, 0},
                  {"validation", 1, 18, 0},
                  {"bsp_train", 2, 36, 1},
                  {"bsp_test", 2, 36, 1}};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(manifest.splits(i).name(), expected[i].name);
    EXPECT_EQ(manifest.splits(i).games(), expected[i].games) << i;
    EXPECT_EQ(manifest.splits(i).characters(), expected[i].characters) << i;
    EXPECT_EQ(manifest.splits(i).games_filtered(), expected[i].filtered) << i;
  }
  for (const auto& [split, indices] :
       {std::pair<std::string, std::vector<int>>{"bsp_train", {4, 5}},
        {"bsp_test", {7, 8}}}) {
    auto jsonl =
        ReadFileToString(absl::StrCat(dir, "/chess/", split, ".jsonl"));
    ASSERT_TRUE(jsonl.ok());
    auto games = ParseGamesJsonl(*jsonl);
    ASSERT_TRUE(games.ok()) << games.status();
    ASSERT_EQ(games->size(), indices.size());
    for (size_t i = 0; i < indices.size(); ++i) {
      EXPECT_EQ((*games)[i].index(), indices[i]) << split;
      EXPECT_EQ((*games)[i].fens_size(), 5) << split;
    }
  }
  auto train = TokenShardSet::Open(dir + "/chess/train/train.tokens.textproto");
  ASSERT_TRUE(train.ok()) << train.status();
  EXPECT_EQ((*train)->tokens(), 36);
  EXPECT_EQ((*train)->manifest().vocab_size(), 32);
  EXPECT_EQ((*train)->manifest().end_of_text_id(), 15);
  EXPECT_EQ((*train)->manifest().tokenizer_sha256(), Sha256Hex(kVocabulary));
  // Each game starts with its own ';' (id 15): positions 0 and 18.
  EXPECT_EQ((*train)->shard(0)[0], 15);
  EXPECT_EQ((*train)->shard(0)[18], 15);
  EXPECT_EQ((*train)->shard(0)[2], 4);  // '.'

  // A pool smaller than the splits fails before anything is staged.
  options.out_dir = dir + "/too_many";
  options.train_games = 5;
  StagedOutputs outputs;
  EXPECT_EQ(std::string(BuildChessDataset(options, outputs).message()),
            "the pool has 9 games, fewer than 10");
}

}  // namespace
}  // namespace sparse_layers::datasets::chess
