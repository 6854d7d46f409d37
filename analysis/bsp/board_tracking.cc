#include "analysis/bsp/board_tracking.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "analysis/bsp/chess_board.h"
#include "base/common/status_macros.h"
#include "datasets/chess/chess_games.h"

namespace sparse_layers::analysis {
namespace {

using datasets::chess::ChessGame;
using datasets::chess::kVocabulary;

struct Totals {
  int games = 0, plies = 0, legal_greedy = 0, legal_sampled = 0, characters = 0;
  double loss = 0, floor = 0;
};

// Continues every prefix by up to `max_length` characters, stopping at a
// space or a game separator, or as soon as the text is no legal move's
// prefix (it can only end illegal: cheap for models that do not track the
// board); greedy or sampled at temperature 1.
std::vector<std::string> Continue(
    const std::vector<std::vector<int>>& prefixes,
    const std::vector<std::vector<std::string>>& legal,
    const NextTokenLogProbs& log_probs, int max_length,
    std::mt19937_64* sampler) {
  const int n = static_cast<int>(prefixes.size());
  std::vector<std::vector<int>> ids = prefixes;
  std::vector<std::string> moves(n);
  std::vector<bool> done(n, false);
  for (int step = 0; step < max_length + 1; ++step) {
    // Only unfinished rows run, right-padded: a causal model's earlier
    // positions never see the padding.
    std::vector<int> active;
    size_t longest = 0;
    for (int i = 0; i < n; ++i) {
      if (done[i]) continue;
      active.push_back(i);
      longest = std::max(longest, ids[i].size());
    }
    if (active.empty()) break;
    torch::Tensor tokens = torch::zeros(
        {static_cast<int64_t>(active.size()), static_cast<int64_t>(longest)},
        torch::kLong);
    for (size_t a = 0; a < active.size(); ++a) {
      const std::vector<int>& row = ids[active[a]];
      tokens[a]
          .narrow(0, 0, row.size())
          .copy_(torch::tensor(std::vector<int64_t>(row.begin(), row.end())));
    }
    const torch::Tensor lp = log_probs(tokens).to(torch::kDouble);
    for (size_t a = 0; a < active.size(); ++a) {
      const int i = active[a];
      const torch::Tensor row = lp[a][ids[i].size() - 1];
      int next = 0;
      if (sampler == nullptr) {
        next = static_cast<int>(row.argmax().item<int64_t>());
      } else {
        const torch::Tensor p = row.exp().contiguous();
        std::discrete_distribution<int> pick(p.data_ptr<double>(),
                                             p.data_ptr<double>() + p.numel());
        next = pick(*sampler);
      }
      const char c = kVocabulary[next];
      if (c == ' ' || c == ';' || step == max_length) {
        done[i] = true;
        if (step == max_length && c != ' ' && c != ';') moves[i] += '?';
        continue;
      }
      moves[i] += c;
      ids[i].push_back(next);
      done[i] = std::none_of(legal[i].begin(), legal[i].end(),
                             [&](const std::string& san) {
                               return absl::StartsWith(san, moves[i]);
                             });
    }
  }
  return moves;
}

}  // namespace

std::vector<PlySpan> PlySpans(absl::string_view text) {
  std::vector<PlySpan> spans;
  int i = 0;
  const int n = static_cast<int>(text.size());
  while (i < n) {
    int start = i, end = i;
    while (end < n && text[end] != ' ') ++end;
    if (start < end && text[start] == ';') ++start;
    // A move number ("12.") is part of white's token.
    int digits = start;
    while (digits < end && text[digits] >= '0' && text[digits] <= '9') ++digits;
    if (digits > start && digits < end && text[digits] == '.')
      start = digits + 1;
    if (start < end) spans.push_back({start, end});
    i = end + 1;
  }
  return spans;
}

absl::StatusOr<std::vector<BoardTrackingResult>> EvaluateBoardTracking(
    const std::vector<ChessGame>& games, const NextTokenLogProbs& log_probs,
    const BoardTrackingOptions& options) {
  std::map<std::string, Totals> by_policy;
  std::mt19937_64 sampler(options.sampling_seed);
  torch::NoGradGuard no_grad;
  for (const ChessGame& game : games) {
    const std::string text = game.text().substr(0, options.characters);
    ASSIGN_OR_RETURN(auto ids, datasets::chess::EncodeGame(text));
    // Plies whose SAN and the space after it lie in the window.
    std::vector<PlySpan> plies;
    for (const PlySpan& span : PlySpans(text)) {
      if (span.end >= static_cast<int>(text.size()) ||
          static_cast<int>(plies.size()) >= game.fens_size()) {
        break;
      }
      plies.push_back(span);
    }
    if (plies.empty()) continue;
    Totals total;
    total.games = 1;
    std::vector<std::vector<int>> prefixes;
    std::vector<absl::flat_hash_set<std::string>> legal, continued_legal;
    std::vector<std::vector<std::string>> continued_sans;
    for (int k = 0; k < static_cast<int>(plies.size()); ++k) {
      ASSIGN_OR_RETURN(auto position, ParsePosition(game.fens(k)));
      const std::vector<std::string> sans = LegalSanMoves(position);
      legal.emplace_back(sans.begin(), sans.end());
      const std::string played(
          text.substr(plies[k].start, plies[k].end - plies[k].start));
      // The games' own moves check the generator against pgn-extract.
      if (!legal.back().contains(played)) {
        return absl::InternalError(
            absl::StrCat("move generator disagrees with the data: ", played,
                         " is not among the legal moves of ", game.fens(k)));
      }
      total.floor += std::log(static_cast<double>(sans.size()));
    }
    // Evenly spaced plies whose longest continuation fits the window.
    int continuable = 0;
    while (continuable < static_cast<int>(plies.size()) &&
           plies[continuable].start + options.max_move_length <
               options.characters) {
      ++continuable;
    }
    const int chosen = std::min(options.plies_per_game, continuable);
    for (int j = 0; j < chosen; ++j) {
      const int k = (2 * j + 1) * continuable / (2 * chosen);
      prefixes.emplace_back(ids.begin(), ids.begin() + plies[k].start);
      continued_legal.push_back(legal[k]);
      continued_sans.emplace_back(legal[k].begin(), legal[k].end());
    }
    // Loss over characters 1..E, E the space after the last complete ply.
    const int last = plies.back().end;
    const torch::Tensor tokens =
        torch::tensor(std::vector<int64_t>(ids.begin(), ids.begin() + last + 1))
            .unsqueeze(0);
    const torch::Tensor lp = log_probs(tokens)[0].to(torch::kDouble);
    const torch::Tensor targets = tokens[0].narrow(0, 1, last);
    total.loss = -lp.narrow(0, 0, last)
                      .gather(1, targets.unsqueeze(1))
                      .sum()
                      .item<double>();
    total.characters = last;
    const std::vector<std::string> greedy = Continue(
        prefixes, continued_sans, log_probs, options.max_move_length, nullptr);
    const std::vector<std::string> sampled = Continue(
        prefixes, continued_sans, log_probs, options.max_move_length, &sampler);
    total.plies = static_cast<int>(prefixes.size());
    for (int k = 0; k < total.plies; ++k) {
      total.legal_greedy += continued_legal[k].contains(greedy[k]);
      total.legal_sampled += continued_legal[k].contains(sampled[k]);
    }
    const std::string policy = game.policy() == "random" ? "random" : "engine";
    for (const std::string& key : {std::string("all"), policy}) {
      Totals& t = by_policy[key];
      t.games += total.games;
      t.plies += total.plies;
      t.legal_greedy += total.legal_greedy;
      t.legal_sampled += total.legal_sampled;
      t.characters += total.characters;
      t.loss += total.loss;
      t.floor += total.floor;
    }
  }
  std::vector<BoardTrackingResult> results;
  for (const char* key : {"all", "random", "engine"}) {
    auto it = by_policy.find(key);
    if (it == by_policy.end()) continue;
    const Totals& t = it->second;
    BoardTrackingResult r;
    r.policy = key;
    r.games = t.games;
    r.plies = t.plies;
    r.characters = t.characters;
    r.legal_move_rate_greedy = t.plies ? double(t.legal_greedy) / t.plies : 0;
    r.legal_move_rate_sampled = t.plies ? double(t.legal_sampled) / t.plies : 0;
    r.loss_nats_per_character = t.loss / std::max(1, t.characters);
    r.uniform_legal_floor_nats_per_character =
        t.floor / std::max(1, t.characters);
    results.push_back(r);
  }
  return results;
}

}  // namespace sparse_layers::analysis
