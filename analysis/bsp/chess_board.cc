#include "analysis/bsp/chess_board.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace sparse_layers::analysis {
namespace {

const ChessBoard& InitialBoard() {
  static const ChessBoard board = *ParseFenBoard(
      "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1");
  return board;
}

}  // namespace

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
