#include "analysis/bsp/board_tracking.h"

#include <algorithm>
#include <cmath>

#include "analysis/bsp/chess_board.h"
#include "datasets/chess/chess_games.h"
#include "gtest/gtest.h"

namespace sparse_layers::analysis {
namespace {

using datasets::chess::ChessGame;

ChessPosition Position(const std::string& fen) {
  auto position = ParsePosition(fen);
  EXPECT_TRUE(position.ok()) << position.status();
  return *position;
}

bool HasMove(const std::string& fen, const std::string& san) {
  const std::vector<std::string> sans = LegalSanMoves(Position(fen));
  return std::find(sans.begin(), sans.end(), san) != sans.end();
}

// The standard perft positions (chessprogramming.org "Perft Results").
TEST(ChessMovesTest, PerftMatchesKnownCounts) {
  const ChessPosition start =
      Position(std::string(datasets::chess::kInitialFen));
  EXPECT_EQ(Perft(start, 1), 20);
  EXPECT_EQ(Perft(start, 3), 8902);
  EXPECT_EQ(Perft(start, 4), 197281);
  // Castling, en passant, promotions and pins together.
  const ChessPosition kiwipete = Position(
      "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1");
  EXPECT_EQ(Perft(kiwipete, 1), 48);
  EXPECT_EQ(Perft(kiwipete, 2), 2039);
  EXPECT_EQ(Perft(kiwipete, 3), 97862);
  EXPECT_EQ(Perft(Position("8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1"), 4),
            43238);
  EXPECT_EQ(Perft(Position("r3k2r/Pppp1ppp/1b3nbN/nP6/BBP1P3/q4N2/Pp1P2PP/"
                           "R2Q1RK1 w kq - 0 1"),
                  3),
            9467);
  EXPECT_EQ(Perft(Position("rnbq1k1r/pp1Pbppp/2p5/8/2B5/8/PPP1NnPP/RNBQK2R w "
                           "KQ - 1 8"),
                  3),
            62379);
}

TEST(ChessMovesTest, SanAsPgnExtractWritesIt) {
  EXPECT_TRUE(HasMove(std::string(datasets::chess::kInitialFen), "Nf3"));
  EXPECT_TRUE(HasMove(std::string(datasets::chess::kInitialFen), "e4"));
  const std::string scholar =
      "r1bqkb1r/pppp1ppp/2n2n2/4p2Q/2B1P3/8/PPPP1PPP/RNB1K1NR w KQkq - 4 4";
  EXPECT_TRUE(HasMove(scholar, "Qxf7#"));
  EXPECT_FALSE(HasMove(scholar, "Qxf7+"));
  EXPECT_TRUE(HasMove(scholar, "Bxf7+"));
  // Disambiguation by file, then by rank.
  EXPECT_TRUE(HasMove("k7/8/8/8/8/8/8/1N3N1K w - - 0 1", "Nbd2"));
  EXPECT_TRUE(HasMove("k7/8/8/8/8/8/8/1N3N1K w - - 0 1", "Nfd2"));
  EXPECT_TRUE(HasMove("k7/8/8/8/5N2/8/5N2/7K w - - 0 1", "N4d3"));
  EXPECT_TRUE(HasMove("k7/8/8/8/5N2/8/5N2/7K w - - 0 1", "N2d3"));
  EXPECT_TRUE(HasMove("k7/4P3/8/8/8/8/8/7K w - - 0 1", "e8=Q+"));
  EXPECT_TRUE(HasMove("k7/4P3/8/8/8/8/8/7K w - - 0 1", "e8=N"));
  EXPECT_TRUE(HasMove("k7/8/8/3pP3/8/8/8/7K w - d6 0 1", "exd6"));
  EXPECT_TRUE(HasMove("k7/8/8/8/8/8/8/R3K2R w KQ - 0 1", "O-O-O"));
}

TEST(BoardTrackingTest, PlySpans) {
  const std::vector<PlySpan> spans = PlySpans(";1.e4 e5 12.Nf3 O-O-O");
  ASSERT_EQ(spans.size(), 4u);
  EXPECT_EQ(spans[0].start, 3);
  EXPECT_EQ(spans[0].end, 5);
  EXPECT_EQ(spans[1].start, 6);
  EXPECT_EQ(spans[2].start, 12);
  EXPECT_EQ(spans[3].end, 21);
}

ChessGame OpeningGame() {
  ChessGame game;
  game.set_text(";1.e4 e5 2.Nf3");
  game.set_policy("random");
  game.add_fens(std::string(datasets::chess::kInitialFen));
  game.add_fens("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq e3 0 1");
  game.add_fens(
      "rnbqkbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKBNR w KQkq e6 0 2");
  game.add_fens(
      "rnbqkbnr/pppp1ppp/8/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R b KQkq - 1 2");
  return game;
}

// A model that knows the game: all mass on the game's next character.
NextTokenLogProbs Oracle(const std::string& text) {
  return [text](const torch::Tensor& tokens) {
    auto ids = datasets::chess::EncodeGame(text);
    torch::Tensor logits = torch::zeros({tokens.size(0), tokens.size(1), 32});
    for (int64_t t = 0; t < tokens.size(1); ++t) {
      const int next =
          t + 1 < static_cast<int64_t>(ids->size()) ? (*ids)[t + 1] : 0;
      logits.select(1, t).select(1, next).fill_(100.0);
    }
    return torch::log_softmax(logits, -1);
  };
}

TEST(BoardTrackingTest, OracleAndUniformModels) {
  const ChessGame game = OpeningGame();
  auto oracle = EvaluateBoardTracking({game}, Oracle(game.text()), {});
  ASSERT_TRUE(oracle.ok()) << oracle.status();
  ASSERT_EQ(oracle->size(), 2u);  // all, random
  const BoardTrackingResult& all = (*oracle)[0];
  EXPECT_EQ(all.policy, "all");
  // e4 and e5 are followed by a space in the window; Nf3 is not.
  EXPECT_EQ(all.plies, 2);
  EXPECT_EQ(all.characters, 8);
  EXPECT_DOUBLE_EQ(all.legal_move_rate_greedy, 1.0);
  EXPECT_DOUBLE_EQ(all.legal_move_rate_sampled, 1.0);
  EXPECT_NEAR(all.loss_nats_per_character, 0.0, 1e-9);
  // 20 legal moves for each side: 2 log 20 / 8 characters.
  EXPECT_NEAR(all.uniform_legal_floor_nats_per_character,
              2 * std::log(20.0) / 8, 1e-12);

  auto uniform = EvaluateBoardTracking(
      {game},
      [](const torch::Tensor& tokens) {
        return torch::full({tokens.size(0), tokens.size(1), 32},
                           -std::log(32.0));
      },
      {});
  ASSERT_TRUE(uniform.ok()) << uniform.status();
  EXPECT_NEAR((*uniform)[0].loss_nats_per_character, std::log(32.0), 1e-6);
  // Greedy picks id 0, the space: an empty move.
  EXPECT_DOUBLE_EQ((*uniform)[0].legal_move_rate_greedy, 0.0);
}

TEST(BoardTrackingTest, RejectsAMoveTheGeneratorCallsIllegal) {
  ChessGame game = OpeningGame();
  game.set_text(";1.e5 e5 2.Nf3");
  EXPECT_FALSE(EvaluateBoardTracking({game}, Oracle(game.text()), {}).ok());
}

}  // namespace
}  // namespace sparse_layers::analysis
