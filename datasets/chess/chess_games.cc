#include "datasets/chess/chess_games.h"

#include <algorithm>
#include <iterator>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/common/status_macros.h"
#include "datasets/chess/chess_rules.h"
#include "google/protobuf/util/json_util.h"

namespace sparse_layers::datasets::chess {
namespace {

// "12." or "12..." (pgn-extract writes the latter after a comment).
bool IsMoveNumber(absl::string_view token) {
  const size_t dot = token.find('.');
  if (dot == 0 || dot == absl::string_view::npos) return false;
  for (size_t i = 0; i < dot; ++i) {
    if (token[i] < '0' || token[i] > '9') return false;
  }
  return token.find_first_not_of('.', dot) == absl::string_view::npos;
}

bool IsResult(absl::string_view token) {
  return token == "*" || token == "1-0" || token == "0-1" || token == "1/2-1/2";
}

bool IsFile(char c) { return c >= 'a' && c <= 'h'; }
bool IsRank(char c) { return c >= '1' && c <= '8'; }

}  // namespace

absl::Status CheckFen(absl::string_view fen) {
  auto error = [&](absl::string_view what) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", fen.substr(0, 90), "' is not a FEN: ", what));
  };
  const std::vector<absl::string_view> fields =
      absl::StrSplit(fen, ' ', absl::SkipEmpty());
  if (fields.size() != 6) {
    return error(absl::StrCat(fields.size(), " fields, not 6"));
  }
  const std::vector<absl::string_view> ranks = absl::StrSplit(fields[0], '/');
  if (ranks.size() != 8) return error(absl::StrCat(ranks.size(), " ranks"));
  for (absl::string_view rank : ranks) {
    int squares = 0;
    for (char c : rank) {
      if (c >= '1' && c <= '8') {
        squares += c - '0';
      } else if (absl::string_view("pnbrqkPNBRQK").find(c) !=
                 absl::string_view::npos) {
        ++squares;
      } else {
        return error(absl::StrCat("'", std::string(1, c), "' on the board"));
      }
    }
    if (squares != 8) return error(absl::StrCat("a rank of ", squares));
  }
  if (fields[1] != "w" && fields[1] != "b") return error("side to move");
  if (fields[2] != "-" &&
      (fields[2].size() > 4 ||
       fields[2].find_first_not_of("KQkq") != absl::string_view::npos)) {
    return error("castling rights");
  }
  if (fields[3] != "-" && (fields[3].size() != 2 || !IsFile(fields[3][0]) ||
                           (fields[3][1] != '3' && fields[3][1] != '6'))) {
    return error("en passant square");
  }
  int counter = 0;
  if (!absl::SimpleAtoi(fields[4], &counter) || counter < 0 ||
      !absl::SimpleAtoi(fields[5], &counter) || counter < 1) {
    return error("move counters");
  }
  return absl::OkStatus();
}

absl::Status CheckSan(absl::string_view san) {
  absl::string_view move = san;
  if (!absl::ConsumeSuffix(&move, "+")) absl::ConsumeSuffix(&move, "#");
  if (move == "O-O" || move == "O-O-O") return absl::OkStatus();
  auto error = [&] {
    return absl::InvalidArgumentError(
        absl::StrCat("'", san.substr(0, 20), "' is not a move (SAN)"));
  };
  // Promotion "=Q" at the end.
  if (move.size() >= 2 && move[move.size() - 2] == '=') {
    if (absl::string_view("QRBN").find(move.back()) ==
        absl::string_view::npos) {
      return error();
    }
    move.remove_suffix(2);
  }
  if (move.size() < 2 || !IsFile(move[move.size() - 2]) ||
      !IsRank(move.back())) {
    return error();
  }
  move.remove_suffix(2);  // The target square.
  if (!move.empty() && absl::string_view("KQRBN").find(move.front()) !=
                           absl::string_view::npos) {
    move.remove_prefix(1);
  }
  absl::ConsumeSuffix(&move, "x");
  // What is left disambiguates: a file, a rank, or both.
  if (move.size() > 2) return error();
  for (char c : move) {
    if (!IsFile(c) && !IsRank(c)) return error();
  }
  return absl::OkStatus();
}

namespace {

// Replays the moves from the initial position: each must be legal where it is
// played and lead to the pieces of the FEN written after it (pgn-extract
// writes both, so a mismatch is an edited or corrupt game).
absl::Status CheckLegalGame(const std::vector<std::string>& san,
                            const ChessGame& game) {
  ASSIGN_OR_RETURN(ChessPosition position, ParsePosition(game.fens(0)));
  for (size_t ply = 0; ply < san.size(); ++ply) {
    bool played = false;
    for (const ChessMove& move : LegalMoves(position)) {
      if (ToSan(position, move) == san[ply]) {
        position = MakeMove(position, move);
        played = true;
        break;
      }
    }
    if (!played) {
      return absl::InvalidArgumentError(
          absl::StrCat("ply ", ply + 1, " '", san[ply],
                       "' is not a legal move in ", game.fens(ply)));
    }
    // Pieces, side to move and castling rights; the en-passant field is left
    // out, as writers differ on when they set it.
    ASSIGN_OR_RETURN(const ChessPosition written,
                     ParsePosition(game.fens(ply + 1)));
    if (written.board != position.board ||
        written.white_to_move != position.white_to_move ||
        !std::equal(std::begin(written.castling), std::end(written.castling),
                    std::begin(position.castling))) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the FEN after ply ", ply + 1, " '", san[ply], "' (",
          game.fens(ply + 1), ") is not the position the move leads to"));
    }
  }
  return absl::OkStatus();
}

absl::Status ParseMovetext(absl::string_view text, ChessGame* game) {
  std::vector<std::string> san;
  game->add_fens(std::string(kInitialFen));
  size_t i = 0;
  while (i < text.size()) {
    if (text[i] == ' ' || text[i] == '\n' || text[i] == '\r') {
      ++i;
    } else if (text[i] == '{') {
      const size_t end = text.find('}', i);
      if (end == absl::string_view::npos) {
        return absl::InvalidArgumentError("unterminated { comment }");
      }
      if (static_cast<int>(san.size()) != game->fens_size()) {
        return absl::InvalidArgumentError(
            "a FEN comment that does not follow a move");
      }
      const absl::string_view fen =
          absl::StripAsciiWhitespace(text.substr(i + 1, end - i - 1));
      RETURN_IF_ERROR(CheckFen(fen));
      game->add_fens(std::string(fen));
      i = end + 1;
    } else {
      size_t end = text.find_first_of(" \n{", i);
      if (end == absl::string_view::npos) end = text.size();
      const absl::string_view token = text.substr(i, end - i);
      if (!IsMoveNumber(token) && !IsResult(token)) {
        if (static_cast<int>(san.size()) + 1 != game->fens_size()) {
          return absl::InvalidArgumentError(absl::StrCat(
              "move ", token, " without the FEN of the move before"));
        }
        RETURN_IF_ERROR(CheckSan(token));
        san.emplace_back(token);
      }
      i = end;
    }
  }
  if (static_cast<int>(san.size()) + 1 != game->fens_size()) {
    return absl::InvalidArgumentError("the last move has no FEN comment");
  }
  RETURN_IF_ERROR(CheckLegalGame(san, *game));
  game->set_text(GameString(san));
  return absl::OkStatus();
}

}  // namespace

std::string GameString(const std::vector<std::string>& san_moves) {
  std::string text = ";";
  for (size_t ply = 0; ply < san_moves.size(); ++ply) {
    if (ply > 0) text += ' ';
    if (ply % 2 == 0) absl::StrAppend(&text, ply / 2 + 1, ".");
    text += san_moves[ply];
  }
  return text;
}

absl::StatusOr<std::vector<ChessGame>> ParsePgnExtractOutput(
    absl::string_view pgn) {
  std::vector<ChessGame> games;
  ChessGame current;
  bool in_game = false;
  for (absl::string_view line : absl::StrSplit(pgn, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (line.empty()) continue;
    if (line[0] == '[') {
      in_game = true;
      absl::string_view value = line;
      const size_t quote = value.find('"');
      const size_t last = value.rfind('"');
      if (quote == absl::string_view::npos || last <= quote) continue;
      value = value.substr(quote + 1, last - quote - 1);
      if (absl::StartsWith(line, "[Event ")) {
        int64_t index = 0;
        if (!absl::SimpleAtoi(value, &index)) {
          return absl::InvalidArgumentError(
              absl::StrCat("[Event] is not a game index: ", line));
        }
        current.set_index(index);
      } else if (absl::StartsWith(line, "[Round ")) {
        current.set_policy(std::string(value));
      }
      continue;
    }
    if (!in_game) {
      return absl::InvalidArgumentError("movetext before any tag");
    }
    if (absl::Status status = ParseMovetext(line, &current); !status.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("game ", current.index(), ": ", status.message()));
    }
    games.push_back(std::move(current));
    current = ChessGame();
    in_game = false;
  }
  return games;
}

absl::StatusOr<std::vector<int>> EncodeGame(absl::string_view text) {
  std::vector<int> ids;
  ids.reserve(text.size());
  for (char c : text) {
    const size_t id = kVocabulary.find(c);
    if (id == absl::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("character '", std::string(1, c),
                       "' is not in the chess vocabulary"));
    }
    ids.push_back(static_cast<int>(id));
  }
  return ids;
}

std::string GameToJson(const ChessGame& game) {
  std::string json;
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  (void)google::protobuf::util::MessageToJsonString(game, &json, options);
  return json;
}

absl::StatusOr<std::vector<ChessGame>> ParseGamesJsonl(
    absl::string_view jsonl) {
  std::vector<ChessGame> games;
  for (absl::string_view line :
       absl::StrSplit(jsonl, '\n', absl::SkipEmpty())) {
    ChessGame game;
    if (!google::protobuf::util::JsonStringToMessage(
             google::protobuf::StringPiece(line.data(), line.size()), &game)
             .ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("not a ChessGame: ", line.substr(0, 80)));
    }
    for (const std::string& fen : game.fens()) {
      if (absl::Status status = CheckFen(fen); !status.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("game ", game.index(), ": ", status.message()));
      }
    }
    // Every consumer reads the position after each ply.
    if (game.fens().empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "game ", game.index(), " has no FENs: ", line.substr(0, 80)));
    }
    games.push_back(std::move(game));
  }
  return games;
}

}  // namespace sparse_layers::datasets::chess
