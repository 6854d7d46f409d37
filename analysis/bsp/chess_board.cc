#include "analysis/bsp/chess_board.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace sparse_layers::analysis {
namespace {

int PieceValue(char c) {
  const char lower = static_cast<char>(c | 0x20);
  const int magnitude = lower == 'p'   ? 1
                        : lower == 'n' ? 2
                        : lower == 'b' ? 3
                        : lower == 'r' ? 4
                        : lower == 'q' ? 5
                        : lower == 'k' ? 6
                                       : 0;
  return c == lower ? -magnitude : magnitude;  // Lower case is black.
}

const ChessBoard& InitialBoard() {
  static const ChessBoard board = *ParseFenBoard(
      "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1");
  return board;
}

}  // namespace

absl::StatusOr<ChessBoard> ParseFenBoard(absl::string_view fen) {
  ChessBoard board{};
  int rank = 7, file = 0;
  for (char c : fen.substr(0, fen.find(' '))) {
    if (c == '/') {
      if (file != 8) break;
      --rank;
      file = 0;
    } else if (c >= '1' && c <= '8') {
      file += c - '0';
    } else if (PieceValue(c) != 0 && file < 8 && rank >= 0) {
      board[rank * 8 + file++] = static_cast<int8_t>(PieceValue(c));
    } else {
      return absl::InvalidArgumentError(absl::StrCat("bad FEN: ", fen));
    }
  }
  if (rank != 0 || file != 8) {
    return absl::InvalidArgumentError(absl::StrCat("bad FEN: ", fen));
  }
  return board;
}

int PieceOnSquareIndex(int value, int square) {
  const int plane = value < 0 ? value + 6 : value + 5;
  return plane * 64 + square;
}

torch::Tensor PieceOnSquareProperties(const ChessBoard& board,
                                      bool mask_initial) {
  torch::Tensor properties =
      torch::zeros({kPieceOnSquareProperties}, torch::kUInt8);
  auto accessor = properties.accessor<uint8_t, 1>();
  for (int square = 0; square < 64; ++square) {
    const int value = board[square];
    if (value == 0) continue;
    if (mask_initial && InitialBoard()[square] == value) continue;
    accessor[PieceOnSquareIndex(value, square)] = 1;
  }
  return properties;
}

std::vector<int> EvaluatedDots(absl::string_view text, int max_characters,
                               int max_dots) {
  std::vector<int> dots;
  const int end = std::min<int>(max_characters, text.size());
  for (int i = 0; i < end && static_cast<int>(dots.size()) < max_dots; ++i) {
    if (text[i] == '.') dots.push_back(i);
  }
  return dots;
}

int StateIndexAt(absl::string_view text, int i, int states) {
  const int spaces =
      static_cast<int>(std::count(text.begin(), text.begin() + i + 1, ' '));
  return std::min(spaces, states - 1);
}

}  // namespace sparse_layers::analysis
