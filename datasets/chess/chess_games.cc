#include "datasets/chess/chess_games.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
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
      game->add_fens(std::string(
          absl::StripAsciiWhitespace(text.substr(i + 1, end - i - 1))));
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
        san.emplace_back(token);
      }
      i = end;
    }
  }
  if (static_cast<int>(san.size()) + 1 != game->fens_size()) {
    return absl::InvalidArgumentError("the last move has no FEN comment");
  }
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
