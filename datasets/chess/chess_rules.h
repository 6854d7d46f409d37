// The rules of chess: FEN positions and legal moves in standard algebraic
// notation (SAN), the notation of the character games the MoE-X chess models
// read (arXiv:2503.07639 Sec. 5.1): what a game in the dataset, and a sampled
// continuation, must match to be legal.
#ifndef SPARSE_LAYERS_DATASETS_CHESS_CHESS_RULES_H_
#define SPARSE_LAYERS_DATASETS_CHESS_CHESS_RULES_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace sparse_layers::datasets::chess {

// Square index = rank * 8 + file (a1 = 0, h1 = 7, a8 = 56); values -6..6:
// black king..pawn = -6..-1, empty 0, white pawn..king = 1..6.
using ChessBoard = std::array<int8_t, 64>;

// The piece placement (first field) of a FEN.
absl::StatusOr<ChessBoard> ParseFenBoard(absl::string_view fen);

// A full FEN position: the board plus side to move, castling rights and the
// en-passant target square (-1 when none).
struct ChessPosition {
  ChessBoard board{};
  bool white_to_move = true;
  // White king side, white queen side, black king side, black queen side.
  bool castling[4] = {false, false, false, false};
  int en_passant = -1;
};

struct ChessMove {
  int from = 0;
  int to = 0;
  int promotion = 0;  // Piece magnitude 2..5, 0 for none.
};

absl::StatusOr<ChessPosition> ParsePosition(absl::string_view fen);

std::vector<ChessMove> LegalMoves(const ChessPosition& position);

ChessPosition MakeMove(const ChessPosition& position, const ChessMove& move);

// Whether the side to move is in check.
bool InCheck(const ChessPosition& position);

// SAN of a legal move, with pgn-extract's conventions: "O-O", "exd5", "Nbd7",
// "e8=Q", "+" for check and "#" for mate.
std::string ToSan(const ChessPosition& position, const ChessMove& move);

std::vector<std::string> LegalSanMoves(const ChessPosition& position);

// Leaf nodes of the legal move tree `depth` plies deep (the standard
// move-generator check).
int64_t Perft(const ChessPosition& position, int depth);

}  // namespace sparse_layers::datasets::chess

#endif  // SPARSE_LAYERS_DATASETS_CHESS_CHESS_RULES_H_
