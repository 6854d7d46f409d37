#include "datasets/chess/uci_engine.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <map>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace sparse_layers::datasets::chess {

absl::StatusOr<std::unique_ptr<UciEngine>> UciEngine::Start(
    const std::string& path) {
  int to_child[2], from_child[2];
  if (pipe(to_child) != 0 || pipe(from_child) != 0) {
    return absl::InternalError("pipe() failed");
  }
  const pid_t pid = fork();
  if (pid < 0) return absl::InternalError("fork() failed");
  if (pid == 0) {
    dup2(to_child[0], STDIN_FILENO);
    dup2(from_child[1], STDOUT_FILENO);
    close(to_child[1]);
    close(from_child[0]);
    execl(path.c_str(), path.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(to_child[0]);
  close(from_child[1]);
  std::unique_ptr<UciEngine> engine(new UciEngine());
  engine->pid_ = pid;
  engine->to_engine_ = fdopen(to_child[1], "w");
  engine->from_engine_ = fdopen(from_child[0], "r");
  if (auto s = engine->Send("uci"); !s.ok()) return s;
  while (true) {
    auto line = engine->ReadLine();
    if (!line.ok()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "cannot start the UCI engine ", path,
          " (install Debian's stockfish): ", line.status().message()));
    }
    absl::string_view text = *line;
    if (absl::ConsumePrefix(&text, "id name "))
      engine->name_ = std::string(text);
    if (*line == "uciok") break;
  }
  // One thread: node-limited single-threaded search is deterministic.
  if (auto s = engine->Send("setoption name Threads value 1"); !s.ok()) {
    return s;
  }
  return engine;
}

UciEngine::~UciEngine() {
  if (to_engine_ != nullptr) {
    (void)Send("quit");
    fclose(to_engine_);
  }
  if (from_engine_ != nullptr) fclose(from_engine_);
  if (pid_ > 0) waitpid(pid_, nullptr, 0);
}

absl::Status UciEngine::Send(const std::string& line) {
  if (fputs((line + "\n").c_str(), to_engine_) < 0 || fflush(to_engine_) != 0) {
    return absl::InternalError("the UCI engine closed its input");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> UciEngine::ReadLine() {
  char* buffer = nullptr;
  size_t capacity = 0;
  const ssize_t length = getline(&buffer, &capacity, from_engine_);
  if (length < 0) {
    free(buffer);
    return absl::InternalError("the UCI engine closed its output");
  }
  std::string line(buffer, length);
  free(buffer);
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) {
    line.pop_back();
  }
  return line;
}

absl::Status UciEngine::NewGame() {
  if (auto s = Send("ucinewgame"); !s.ok()) return s;
  if (auto s = Send("isready"); !s.ok()) return s;
  while (true) {
    auto line = ReadLine();
    if (!line.ok()) return line.status();
    if (*line == "readyok") return absl::OkStatus();
  }
}

absl::Status UciEngine::SetPosition(const std::vector<std::string>& moves) {
  return Send(moves.empty() ? std::string("position startpos")
                            : absl::StrCat("position startpos moves ",
                                           absl::StrJoin(moves, " ")));
}

absl::StatusOr<std::vector<std::string>> UciEngine::LegalMoves(
    const std::vector<std::string>& moves) {
  if (auto s = SetPosition(moves); !s.ok()) return s;
  if (auto s = Send("go perft 1"); !s.ok()) return s;
  std::vector<std::string> legal;
  while (true) {
    auto line = ReadLine();
    if (!line.ok()) return line.status();
    if (absl::StartsWith(*line, "Nodes searched")) return legal;
    const std::vector<std::string> parts = absl::StrSplit(*line, ": ");
    if (parts.size() == 2 && parts[1] == "1") legal.push_back(parts[0]);
  }
}

absl::StatusOr<std::vector<ScoredMove>> UciEngine::Search(
    const std::vector<std::string>& moves, int nodes, int lines) {
  if (lines != multipv_) {
    if (auto s = Send(absl::StrCat("setoption name MultiPV value ", lines));
        !s.ok()) {
      return s;
    }
    multipv_ = lines;
  }
  if (auto s = SetPosition(moves); !s.ok()) return s;
  if (auto s = Send(absl::StrCat("go nodes ", nodes)); !s.ok()) return s;
  std::map<int, ScoredMove> by_rank;  // The deepest report of each line wins.
  while (true) {
    auto line = ReadLine();
    if (!line.ok()) return line.status();
    if (absl::StartsWith(*line, "bestmove")) break;
    if (!absl::StartsWith(*line, "info ")) continue;
    const std::vector<std::string> words =
        absl::StrSplit(*line, ' ', absl::SkipEmpty());
    int rank = 1;
    ScoredMove scored;
    bool has_score = false;
    for (size_t i = 0; i + 1 < words.size(); ++i) {
      if (words[i] == "multipv") {
        (void)absl::SimpleAtoi(words[i + 1], &rank);
      } else if (words[i] == "score" && i + 2 < words.size()) {
        int value = 0;
        (void)absl::SimpleAtoi(words[i + 2], &value);
        if (words[i + 1] == "mate") {
          value = value > 0 ? 100000 - value : -100000 - value;
        }
        scored.centipawns = value;
        has_score = true;
      } else if (words[i] == "pv") {
        scored.move = words[i + 1];
        break;
      }
    }
    if (has_score && !scored.move.empty()) by_rank[rank] = scored;
  }
  std::vector<ScoredMove> result;
  for (const auto& [rank, scored] : by_rank) result.push_back(scored);
  return result;
}

}  // namespace sparse_layers::datasets::chess
