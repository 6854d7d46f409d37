#include "datasets/chess/chess_rules.h"

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/common/status_macros.h"

namespace sparse_layers::datasets::chess {
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

constexpr int kPawn = 1, kKnight = 2, kBishop = 3, kRook = 4, kQueen = 5,
              kKing = 6;
constexpr int kKnightSteps[8][2] = {{1, 2},   {2, 1},   {2, -1}, {1, -2},
                                    {-1, -2}, {-2, -1}, {-2, 1}, {-1, 2}};
constexpr int kKingSteps[8][2] = {{1, 0},  {1, 1},   {0, 1},  {-1, 1},
                                  {-1, 0}, {-1, -1}, {0, -1}, {1, -1}};
constexpr int kRookRays[4][2] = {{1, 0}, {-1, 0}, {0, 1}, {0, -1}};
constexpr int kBishopRays[4][2] = {{1, 1}, {1, -1}, {-1, 1}, {-1, -1}};

int File(int square) { return square % 8; }
int Rank(int square) { return square / 8; }
bool OnBoard(int file, int rank) {
  return file >= 0 && file < 8 && rank >= 0 && rank < 8;
}
int Square(int file, int rank) { return rank * 8 + file; }
int Colour(int value) { return value > 0 ? 1 : value < 0 ? -1 : 0; }

// Whether a piece of colour `by` (+1 white, -1 black) attacks `square`.
bool Attacked(const ChessBoard& board, int square, int by) {
  const int f = File(square), r = Rank(square);
  // A pawn of colour `by` attacks from one rank behind it.
  for (int df : {-1, 1}) {
    const int pf = f + df, pr = r - by;
    if (OnBoard(pf, pr) && board[Square(pf, pr)] == by * kPawn) return true;
  }
  for (const auto& step : kKnightSteps) {
    const int nf = f + step[0], nr = r + step[1];
    if (OnBoard(nf, nr) && board[Square(nf, nr)] == by * kKnight) return true;
  }
  for (const auto& step : kKingSteps) {
    const int nf = f + step[0], nr = r + step[1];
    if (OnBoard(nf, nr) && board[Square(nf, nr)] == by * kKing) return true;
  }
  for (int slider : {kRook, kBishop}) {
    for (const auto& ray : slider == kRook ? kRookRays : kBishopRays) {
      for (int nf = f + ray[0], nr = r + ray[1]; OnBoard(nf, nr);
           nf += ray[0], nr += ray[1]) {
        const int value = board[Square(nf, nr)];
        if (value == 0) continue;
        if (value == by * slider || value == by * kQueen) return true;
        break;
      }
    }
  }
  return false;
}

int KingSquare(const ChessBoard& board, int colour) {
  for (int s = 0; s < 64; ++s) {
    if (board[s] == colour * kKing) return s;
  }
  return -1;
}

void AddPawnMoves(const ChessPosition& p, int from, int colour,
                  std::vector<ChessMove>& moves) {
  const int f = File(from), r = Rank(from);
  const int last_rank = colour > 0 ? 7 : 0, start_rank = colour > 0 ? 1 : 6;
  auto add = [&](int to) {
    if (Rank(to) == last_rank) {
      for (int piece : {kQueen, kRook, kBishop, kKnight}) {
        moves.push_back({from, to, piece});
      }
    } else {
      moves.push_back({from, to, 0});
    }
  };
  const int one = Square(f, r + colour);
  if (p.board[one] == 0) {
    add(one);
    const int two = Square(f, r + 2 * colour);
    if (r == start_rank && p.board[two] == 0) add(two);
  }
  for (int df : {-1, 1}) {
    if (!OnBoard(f + df, r + colour)) continue;
    const int to = Square(f + df, r + colour);
    if (Colour(p.board[to]) == -colour || to == p.en_passant) add(to);
  }
}

void AddCastling(const ChessPosition& p, int colour,
                 std::vector<ChessMove>& moves) {
  const int home = colour > 0 ? 0 : 56, right = colour > 0 ? 0 : 2;
  const int king = home + 4;
  if (p.board[king] != colour * kKing || Attacked(p.board, king, -colour)) {
    return;
  }
  if (p.castling[right] && p.board[home + 7] == colour * kRook &&
      p.board[home + 5] == 0 && p.board[home + 6] == 0 &&
      !Attacked(p.board, home + 5, -colour) &&
      !Attacked(p.board, home + 6, -colour)) {
    moves.push_back({king, home + 6, 0});
  }
  if (p.castling[right + 1] && p.board[home] == colour * kRook &&
      p.board[home + 1] == 0 && p.board[home + 2] == 0 &&
      p.board[home + 3] == 0 && !Attacked(p.board, home + 3, -colour) &&
      !Attacked(p.board, home + 2, -colour)) {
    moves.push_back({king, home + 2, 0});
  }
}

std::vector<ChessMove> PseudoLegalMoves(const ChessPosition& p) {
  const int colour = p.white_to_move ? 1 : -1;
  std::vector<ChessMove> moves;
  for (int from = 0; from < 64; ++from) {
    const int value = p.board[from];
    if (Colour(value) != colour) continue;
    const int piece = std::abs(value), f = File(from), r = Rank(from);
    if (piece == kPawn) {
      AddPawnMoves(p, from, colour, moves);
      continue;
    }
    if (piece == kKnight || piece == kKing) {
      for (const auto& step : piece == kKnight ? kKnightSteps : kKingSteps) {
        const int nf = f + step[0], nr = r + step[1];
        if (OnBoard(nf, nr) && Colour(p.board[Square(nf, nr)]) != colour) {
          moves.push_back({from, Square(nf, nr), 0});
        }
      }
      continue;
    }
    for (int slider : {kRook, kBishop}) {
      if (piece != slider && piece != kQueen) continue;
      for (const auto& ray : slider == kRook ? kRookRays : kBishopRays) {
        for (int nf = f + ray[0], nr = r + ray[1]; OnBoard(nf, nr);
             nf += ray[0], nr += ray[1]) {
          const int target = p.board[Square(nf, nr)];
          if (Colour(target) == colour) break;
          moves.push_back({from, Square(nf, nr), 0});
          if (target != 0) break;
        }
      }
    }
  }
  AddCastling(p, colour, moves);
  return moves;
}

bool IsCastle(const ChessPosition& p, const ChessMove& m) {
  return std::abs(p.board[m.from]) == kKing &&
         std::abs(File(m.to) - File(m.from)) == 2;
}

bool IsEnPassant(const ChessPosition& p, const ChessMove& m) {
  return std::abs(p.board[m.from]) == kPawn && m.to == p.en_passant &&
         File(m.to) != File(m.from);
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

absl::StatusOr<ChessPosition> ParsePosition(absl::string_view fen) {
  ChessPosition position;
  ASSIGN_OR_RETURN(position.board, ParseFenBoard(fen));
  const std::vector<absl::string_view> fields =
      absl::StrSplit(fen, ' ', absl::SkipEmpty());
  if (fields.size() < 4 || (fields[1] != "w" && fields[1] != "b")) {
    return absl::InvalidArgumentError(absl::StrCat("bad FEN fields: ", fen));
  }
  position.white_to_move = fields[1] == "w";
  for (char c : fields[2]) {
    const size_t i = absl::string_view("KQkq").find(c);
    if (i != absl::string_view::npos) position.castling[i] = true;
  }
  if (fields[3] != "-") {
    if (fields[3].size() != 2 || fields[3][0] < 'a' || fields[3][0] > 'h' ||
        fields[3][1] < '1' || fields[3][1] > '8') {
      return absl::InvalidArgumentError(absl::StrCat("bad en passant: ", fen));
    }
    position.en_passant = Square(fields[3][0] - 'a', fields[3][1] - '1');
  }
  return position;
}

ChessPosition MakeMove(const ChessPosition& p, const ChessMove& m) {
  ChessPosition next = p;
  const int value = p.board[m.from], colour = Colour(value);
  if (IsEnPassant(p, m)) next.board[Square(File(m.to), Rank(m.from))] = 0;
  if (IsCastle(p, m)) {
    const bool king_side = File(m.to) == 6;
    const int home = Rank(m.from) * 8;
    next.board[home + (king_side ? 5 : 3)] =
        next.board[home + (king_side ? 7 : 0)];
    next.board[home + (king_side ? 7 : 0)] = 0;
  }
  next.board[m.to] = m.promotion ? colour * m.promotion : value;
  next.board[m.from] = 0;
  next.en_passant =
      std::abs(value) == kPawn && std::abs(Rank(m.to) - Rank(m.from)) == 2
          ? (m.from + m.to) / 2
          : -1;
  // A king or rook leaving home, or a rook captured at home, ends castling.
  constexpr int kRookHomes[4] = {7, 0, 63, 56};
  for (int i = 0; i < 4; ++i) {
    if (m.from == kRookHomes[i] || m.to == kRookHomes[i]) {
      next.castling[i] = false;
    }
  }
  if (std::abs(value) == kKing) {
    next.castling[colour > 0 ? 0 : 2] = next.castling[colour > 0 ? 1 : 3] =
        false;
  }
  next.white_to_move = !p.white_to_move;
  return next;
}

bool InCheck(const ChessPosition& p) {
  const int colour = p.white_to_move ? 1 : -1;
  const int king = KingSquare(p.board, colour);
  return king >= 0 && Attacked(p.board, king, -colour);
}

std::vector<ChessMove> LegalMoves(const ChessPosition& p) {
  std::vector<ChessMove> legal;
  const int colour = p.white_to_move ? 1 : -1;
  for (const ChessMove& m : PseudoLegalMoves(p)) {
    const ChessPosition next = MakeMove(p, m);
    const int king = KingSquare(next.board, colour);
    if (king >= 0 && !Attacked(next.board, king, -colour)) legal.push_back(m);
  }
  return legal;
}

std::string ToSan(const ChessPosition& p, const ChessMove& m) {
  const int piece = std::abs(p.board[m.from]);
  auto square_name = [](int s) {
    return std::string{static_cast<char>('a' + File(s)),
                       static_cast<char>('1' + Rank(s))};
  };
  std::string san;
  if (IsCastle(p, m)) {
    san = File(m.to) == 6 ? "O-O" : "O-O-O";
  } else {
    const bool capture = p.board[m.to] != 0 || IsEnPassant(p, m);
    if (piece == kPawn) {
      if (capture) san = {static_cast<char>('a' + File(m.from)), 'x'};
    } else {
      san = std::string(1, " PNBRQK"[piece]);
      // Disambiguate by file, else rank, else both (FIDE SAN).
      bool ambiguous = false, same_file = false, same_rank = false;
      if (piece != kKing) {
        for (const ChessMove& other : LegalMoves(p)) {
          if (other.to != m.to || other.from == m.from ||
              p.board[other.from] != p.board[m.from]) {
            continue;
          }
          ambiguous = true;
          same_file |= File(other.from) == File(m.from);
          same_rank |= Rank(other.from) == Rank(m.from);
        }
      }
      if (ambiguous && (!same_file || same_rank)) {
        san += static_cast<char>('a' + File(m.from));
      }
      if (ambiguous && same_file) san += static_cast<char>('1' + Rank(m.from));
      if (capture) san += 'x';
    }
    san += square_name(m.to);
    if (m.promotion) {
      san += '=';
      san += " PNBRQK"[m.promotion];
    }
  }
  const ChessPosition next = MakeMove(p, m);
  if (InCheck(next)) san += LegalMoves(next).empty() ? '#' : '+';
  return san;
}

std::vector<std::string> LegalSanMoves(const ChessPosition& position) {
  std::vector<std::string> sans;
  for (const ChessMove& m : LegalMoves(position)) {
    sans.push_back(ToSan(position, m));
  }
  return sans;
}

int64_t Perft(const ChessPosition& position, int depth) {
  if (depth == 0) return 1;
  const std::vector<ChessMove> moves = LegalMoves(position);
  if (depth == 1) return static_cast<int64_t>(moves.size());
  int64_t nodes = 0;
  for (const ChessMove& m : moves)
    nodes += Perft(MakeMove(position, m), depth - 1);
  return nodes;
}

}  // namespace sparse_layers::datasets::chess
