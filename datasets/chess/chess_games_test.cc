#include "datasets/chess/chess_games.h"

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "datasets/chess/uci_engine.h"
#include "gtest/gtest.h"

namespace sparse_layers::datasets::chess {
namespace {

constexpr char kEngine[] = "/usr/games/stockfish";
constexpr char kPgnExtract[] = "/usr/games/pgn-extract";

TEST(GameStringTest, KarvonenFormat) {
  EXPECT_EQ(GameString({"e4", "e5", "Nf3", "Nc6", "Bb5"}),
            ";1.e4 e5 2.Nf3 Nc6 3.Bb5");
  EXPECT_EQ(GameString({}), ";");
}

// pgn-extract's own output for the fool's mate (copied from a run).
constexpr char kFoolsMate[] =
    "[Event \"3\"]\n[Site \"?\"]\n[Round \"random\"]\n[Result \"*\"]\n\n"
    "1. f3 { rnbqkbnr/pppppppp/8/8/8/5P2/PPPPP1PP/RNBQKBNR b KQkq - 0 1 } "
    "1... e5 { rnbqkbnr/pppp1ppp/8/4p3/8/5P2/PPPPP1PP/RNBQKBNR w KQkq e6 0 2 "
    "} 2. g4 { rnbqkbnr/pppp1ppp/8/4p3/6P1/5P2/PPPPP2P/RNBQKBNR b KQkq g3 0 2 "
    "} 2... Qh4# { rnb1kbnr/pppp1ppp/8/4p3/6Pq/5P2/PPPPP2P/RNBQKBNR w KQkq - 1 "
    "3 } *\n\n";

TEST(PgnExtractOutputTest, ParsesTextFensIndexAndPolicy) {
  auto games = ParsePgnExtractOutput(kFoolsMate);
  ASSERT_TRUE(games.ok()) << games.status();
  ASSERT_EQ(games->size(), 1u);
  const ChessGame& game = (*games)[0];
  EXPECT_EQ(game.text(), ";1.f3 e5 2.g4 Qh4#");
  EXPECT_EQ(game.index(), 3);
  EXPECT_EQ(game.policy(), "random");
  ASSERT_EQ(game.fens_size(), 5);
  EXPECT_EQ(game.fens(0), kInitialFen);
  EXPECT_EQ(game.fens(4),
            "rnb1kbnr/pppp1ppp/8/4p3/6Pq/5P2/PPPPP2P/RNBQKBNR w KQkq - 1 3");
  auto ids = EncodeGame(game.text());
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ((*ids)[0], 15);   // ';'
  EXPECT_EQ((*ids)[2], 4);    // '.'
  EXPECT_EQ(ids->back(), 1);  // '#'
  EXPECT_FALSE(EncodeGame(";1.e4!").ok());
  auto round_trip = ParseGamesJsonl(GameToJson(game) + "\n");
  ASSERT_TRUE(round_trip.ok());
  EXPECT_EQ((*round_trip)[0].SerializeAsString(), game.SerializeAsString());
}

TEST(GamesJsonlTest, RejectsAGameWithoutFens) {
  const auto games =
      ParseGamesJsonl("{\"text\": \";1.e4 e5\", \"index\": \"3\"}\n");
  EXPECT_EQ(games.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(games.status().message().find("game 3 has no FENs"),
            std::string::npos)
      << games.status();
}

TEST(PgnExtractOutputTest, RejectsAMoveWithoutItsFen) {
  EXPECT_FALSE(
      ParsePgnExtractOutput("[Event \"1\"]\n\n1. e4 e5 { x } *\n").ok());
}

TEST(PgnExtractOutputTest, CommentsThatAreNotFensAndMovesThatAreNotSanFail) {
  EXPECT_EQ(ParsePgnExtractOutput("[Event \"1\"]\n\n1. e4 { a good move } *\n")
                .status()
                .message(),
            "game 1: 'a good move' is not a FEN: 3 fields, not 6");
  EXPECT_EQ(ParsePgnExtractOutput("[Event \"1\"]\n\n1. e9 { " +
                                  std::string(kInitialFen) + " } *\n")
                .status()
                .message(),
            "game 1: 'e9' is not a move (SAN)");
}

// Well-formed but wrong: a move that is not legal where it is played, and a
// FEN that is not the position the move leads to.
TEST(PgnExtractOutputTest, IllegalMovesAndWrongFensFail) {
  EXPECT_EQ(
      ParsePgnExtractOutput(
          "[Event \"2\"]\n\n1. e5 { "
          "rnbqkbnr/pppppppp/8/4P3/8/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1 } *\n")
          .status()
          .message(),
      absl::StrCat("game 2: ply 1 'e5' is not a legal move in ", kInitialFen));
  EXPECT_EQ(ParsePgnExtractOutput("[Event \"2\"]\n\n1. e4 { " +
                                  std::string(kInitialFen) + " } *\n")
                .status()
                .message(),
            absl::StrCat("game 2: the FEN after ply 1 'e4' (", kInitialFen,
                         ") is not the position the move leads to"));
  // The right pieces with White still to move.
  constexpr char kWhiteAgain[] =
      "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR w KQkq e3 0 1";
  EXPECT_EQ(ParsePgnExtractOutput(absl::StrCat("[Event \"2\"]\n\n1. e4 { ",
                                               kWhiteAgain, " } *\n"))
                .status()
                .message(),
            absl::StrCat("game 2: the FEN after ply 1 'e4' (", kWhiteAgain,
                         ") is not the position the move leads to"));
}

TEST(FenAndSanTest, SyntaxOfPositionsAndMoves) {
  EXPECT_TRUE(CheckFen(kInitialFen).ok());
  EXPECT_TRUE(
      CheckFen("rnbqkbnr/pp1ppppp/8/2p5/4P3/8/PPPP1PPP/RNBQKBNR w KQkq c6 0 2")
          .ok());
  EXPECT_FALSE(
      CheckFen("rnbqkbnr/pppppppp/9/8/8/8/PPPPPPPP/RNBQKBNR w - - 0 1").ok());
  EXPECT_FALSE(
      CheckFen("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNX w - - 0 1").ok());
  EXPECT_FALSE(CheckFen("8/8/8/8/8/8/8/8 x - - 0 1").ok());
  EXPECT_FALSE(CheckFen("8/8/8/8/8/8/8/8 w KQkx - 0 1").ok());
  EXPECT_FALSE(CheckFen("8/8/8/8/8/8/8/8 w - e4 0 1").ok());
  EXPECT_FALSE(CheckFen("8/8/8/8/8/8/8/8 w - - 0 0").ok());
  for (const char* san : {"e4", "exd5", "Nf3", "Nbd7", "R1e2", "Qh4xe1+",
                          "exd8=Q#", "O-O", "O-O-O+", "Kxf7"}) {
    EXPECT_TRUE(CheckSan(san).ok()) << san;
  }
  for (const char* san : {"e9", "Zf3", "exd8=K", "O-O-O-O", "", "Nbd7d", "x"}) {
    EXPECT_FALSE(CheckSan(san).ok()) << san;
  }
}

TEST(UciEngineTest, LegalMovesAndSearchFromStockfish) {
  auto engine = UciEngine::Start(kEngine);
  ASSERT_TRUE(engine.ok()) << engine.status();
  EXPECT_NE((*engine)->name().find("Stockfish"), std::string::npos);
  ASSERT_TRUE((*engine)->NewGame().ok());
  auto start = (*engine)->LegalMoves({});
  ASSERT_TRUE(start.ok());
  EXPECT_EQ(start->size(), 20u);  // perft(1) of the initial position.
  auto after = (*engine)->LegalMoves({"e2e4", "e7e5"});
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->size(), 29u);
  // Fool's mate: no legal move, and search returns nothing.
  const std::vector<std::string> mated = {"f2f3", "e7e5", "g2g4", "d8h4"};
  EXPECT_TRUE((*engine)->LegalMoves(mated)->empty());
  EXPECT_TRUE((*engine)->Search(mated, 100, 3)->empty());
  auto best = (*engine)->Search({"e2e4"}, 200, 3);
  ASSERT_TRUE(best.ok());
  ASSERT_EQ(best->size(), 3u);
  auto legal = (*engine)->LegalMoves({"e2e4"});
  for (const ScoredMove& move : *best) {
    EXPECT_NE(std::find(legal->begin(), legal->end(), move.move), legal->end());
  }
  EXPECT_GE((*best)[0].centipawns, (*best)[2].centipawns);
}

// A fake engine: a shell script in TEST_TMPDIR.
std::string FakeEngine(const std::string& name, const std::string& body) {
  const std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/" + name;
  std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
  chmod(path.c_str(), 0755);
  return path;
}

TEST(UciEngineTest, MissingEngineFailsAtOnce) {
  const absl::Time start = absl::Now();
  auto engine = UciEngine::Start("/nonexistent/engine");
  EXPECT_EQ(engine.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(engine.status().message().find("No such file or directory"),
            std::string::npos)
      << engine.status();
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

// An engine that echoes (cat), never answers (sleep) or exits at once: an
// error within the timeout, no hang, and no child left to wait for.
TEST(UciEngineTest, EngineThatDoesNotSpeakUciTimesOut) {
  for (const auto& [name, body] :
       std::vector<std::pair<std::string, std::string>>{
           {"echo_engine", "exec cat"},
           {"silent_engine", "exec sleep 1000"},
           {"quitting_engine", "exit 0"}}) {
    const absl::Time start = absl::Now();
    auto engine =
        UciEngine::Start(FakeEngine(name, body), absl::Milliseconds(300));
    EXPECT_FALSE(engine.ok()) << name;
    EXPECT_NE(engine.status().message().find("cannot start the UCI engine"),
              std::string::npos)
        << engine.status();
    EXPECT_LT(absl::Now() - start, absl::Seconds(5)) << name;
  }
}

TEST(UciEngineTest, EngineThatStopsAnsweringTimesOutMidGame) {
  // Says uciok, then never answers "isready" (nor reads "quit").
  auto engine = UciEngine::Start(
      FakeEngine("mute_engine",
                 "read line; echo 'id name Mute'; echo uciok; exec sleep 1000"),
      absl::Milliseconds(300));
  ASSERT_TRUE(engine.ok()) << engine.status();
  EXPECT_EQ((*engine)->name(), "Mute");
  EXPECT_EQ((*engine)->NewGame().code(), absl::StatusCode::kDeadlineExceeded);
}

// The long-algebraic -> SAN + FEN step, run on pgn-extract itself: capture,
// check, promotion and castling come out in Karvonen's notation.
TEST(PgnExtractTest, ConvertsLongAlgebraicToSanWithFens) {
  const std::string dir = std::getenv("TEST_TMPDIR");
  std::ofstream(dir + "/in.pgn")
      << "[Event \"7\"]\n[Round \"random\"]\n[Result \"*\"]\n\n"
         "1. e2e4 d7d5 2. e4e5 f7f5 3. e5f6 g7g6 4. f6f7 e8d7 5. f7g8q a7a6 "
         "6. g1f3 a6a5 7. f1e2 a5a4 8. e1g1 *\n\n";
  const std::string command = std::string(kPgnExtract) +
                              " -s -Wsan --fencomments -w 1000000 " + dir +
                              "/in.pgn > " + dir + "/out.pgn 2>/dev/null";
  ASSERT_EQ(std::system(command.c_str()), 0);
  std::stringstream out;
  out << std::ifstream(dir + "/out.pgn").rdbuf();
  auto games = ParsePgnExtractOutput(out.str());
  ASSERT_TRUE(games.ok()) << games.status();
  ASSERT_EQ(games->size(), 1u);
  EXPECT_EQ((*games)[0].text(),
            ";1.e4 d5 2.e5 f5 3.exf6 g6 4.f7+ Kd7 5.fxg8=Q a6 6.Nf3 a5 "
            "7.Be2 a4 8.O-O");
  EXPECT_EQ((*games)[0].fens(15),
            "rnbq1bQr/1ppkp2p/6p1/3p4/p7/5N2/PPPPBPPP/RNBQ1RK1 b - - 1 8");
}

}  // namespace
}  // namespace sparse_layers::datasets::chess
