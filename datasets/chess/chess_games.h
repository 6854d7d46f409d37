// Games as the models read them: pgn-extract's SAN-plus-FEN output parsed into
// the `;1.e4 e5 2.Nf3 ...` character string (MoE-X, arXiv:2503.07639 Sec. 5.1,
// with Karvonen et al.'s leading ';') and the position after every ply, plus
// the JSONL form of the BSP splits.
#ifndef SPARSE_LAYERS_DATASETS_CHESS_CHESS_GAMES_H_
#define SPARSE_LAYERS_DATASETS_CHESS_CHESS_GAMES_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "datasets/chess/chess.pb.h"

namespace sparse_layers::datasets::chess {

// The 32 characters, id = position (Karvonen's meta.pkl).
inline constexpr absl::string_view kVocabulary =
    " #+-.0123456789;=BKNOQRabcdefghx";
inline constexpr absl::string_view kInitialFen =
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";

// ";1.e4 e5 2.Nf3": move numbers without a space after the dot, one space
// between moves, no result.
std::string GameString(const std::vector<std::string>& san_moves);

// Games of `pgn-extract -Wsan --fencomments -w <wide>` output: tags give
// index ([Event]) and policy ([Round]); each move is followed by { FEN }.
absl::StatusOr<std::vector<ChessGame>> ParsePgnExtractOutput(
    absl::string_view pgn);

// OK when `fen` is Forsyth-Edwards Notation by syntax: 8 ranks of 8 squares
// (piece letters and digits 1-8), side w or b, castling "-" or of KQkq, en
// passant "-" or a third- or sixth-rank square, two move counters. Legality
// of the position is not checked.
absl::Status CheckFen(absl::string_view fen);

// OK when `san` is a move in Standard Algebraic Notation by syntax ("e4",
// "Nbxd7+", "exd8=Q#", "O-O-O"). Legality in the position is not checked.
absl::Status CheckSan(absl::string_view san);

// The ids of `text` in kVocabulary; fails on any other character.
absl::StatusOr<std::vector<int>> EncodeGame(absl::string_view text);

std::string GameToJson(const ChessGame& game);
// One ChessGame per line; a game without FENs is an error.
absl::StatusOr<std::vector<ChessGame>> ParseGamesJsonl(absl::string_view jsonl);

}  // namespace sparse_layers::datasets::chess

#endif  // SPARSE_LAYERS_DATASETS_CHESS_CHESS_GAMES_H_
