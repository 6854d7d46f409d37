// Chess positions as board-state properties: the 768 piece-on-square BSPs of a
// FEN (MoE-X, arXiv:2503.07639 App. B.1; Karvonen's
// board_to_piece_masked_blank_state and its _and_initial_state variant) and
// which character positions of a game string are evaluated, with the position
// each one sees.
#ifndef SPARSE_LAYERS_ANALYSIS_BSP_CHESS_BOARD_H_
#define SPARSE_LAYERS_ANALYSIS_BSP_CHESS_BOARD_H_

#include <torch/torch.h>

#include <array>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "datasets/chess/chess_rules.h"

namespace sparse_layers::analysis {

// The rules live with the games (datasets/chess); the BSP analyses use them.
using datasets::chess::ChessBoard;
using datasets::chess::ChessMove;
using datasets::chess::ChessPosition;
using datasets::chess::InCheck;
using datasets::chess::LegalMoves;
using datasets::chess::LegalSanMoves;
using datasets::chess::MakeMove;
using datasets::chess::ParseFenBoard;
using datasets::chess::ParsePosition;
using datasets::chess::Perft;
using datasets::chess::ToSan;

inline constexpr int kPiecePlanes = 12;
inline constexpr int kPieceOnSquareProperties = kPiecePlanes * 64;  // 768

// Property index plane * 64 + square, plane 0..5 for values -6..-1 and 6..11
// for 1..6 (blank excluded).
int PieceOnSquareIndex(int value, int square);

// (768,) 0/1. With `mask_initial`, a square holding the same piece as in the
// initial position contributes nothing (the _and_initial_state variant).
torch::Tensor PieceOnSquareProperties(const ChessBoard& board,
                                      bool mask_initial);

// The character positions evaluated in a game (as Karvonen et al.'s code picks
// them; MoE-X is silent): the first `max_dots` '.' within the first
// `max_characters` characters.
std::vector<int> EvaluatedDots(absl::string_view text, int max_characters = 256,
                               int max_dots = 20);

// The position a character sees: the number of spaces in text[0..i]
// inclusive (Karvonen's create_state_stack), clipped to the last state.
int StateIndexAt(absl::string_view text, int i, int states);

}  // namespace sparse_layers::analysis

#endif  // SPARSE_LAYERS_ANALYSIS_BSP_CHESS_BOARD_H_
