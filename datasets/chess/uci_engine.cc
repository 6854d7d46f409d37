#include "datasets/chess/uci_engine.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <map>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/common/status_macros.h"

namespace sparse_layers::datasets::chess {

namespace {

// A write to an engine that has exited must fail with EPIPE, not kill the
// process with SIGPIPE.
void IgnoreSigpipe() {
  static const bool kIgnored = [] {
    signal(SIGPIPE, SIG_IGN);
    return true;
  }();
  (void)kIgnored;
}

std::string ErrnoText(int error) {
  char buffer[256];
  return strerror_r(error, buffer, sizeof(buffer));  // GNU: returns the text.
}

}  // namespace

absl::StatusOr<std::unique_ptr<UciEngine>> UciEngine::Start(
    const std::string& path, absl::Duration timeout) {
  IgnoreSigpipe();
  // Close-on-exec: another worker's engine must not inherit these ends (it
  // would hold this engine's input open), and the exec-status pipe tells
  // whether exec succeeded (closed empty) or failed (the errno).
  int to_child[2], from_child[2], exec_status[2];
  if (pipe2(to_child, O_CLOEXEC) != 0 || pipe2(from_child, O_CLOEXEC) != 0 ||
      pipe2(exec_status, O_CLOEXEC) != 0) {
    return absl::InternalError("pipe() failed");
  }
  const pid_t pid = fork();
  if (pid < 0) return absl::InternalError("fork() failed");
  if (pid == 0) {
    dup2(to_child[0], STDIN_FILENO);
    dup2(from_child[1], STDOUT_FILENO);
    execl(path.c_str(), path.c_str(), static_cast<char*>(nullptr));
    const int error = errno;
    (void)!write(exec_status[1], &error, sizeof(error));
    _exit(127);
  }
  close(to_child[0]);
  close(from_child[1]);
  close(exec_status[1]);
  std::unique_ptr<UciEngine> engine(new UciEngine());
  engine->pid_ = pid;
  engine->to_engine_ = to_child[1];
  engine->from_engine_ = from_child[0];
  engine->timeout_ = timeout;
  engine->path_ = path;
  int exec_error = 0;
  ssize_t n;
  do {
    n = read(exec_status[0], &exec_error, sizeof(exec_error));
  } while (n < 0 && errno == EINTR);
  close(exec_status[0]);
  if (n == sizeof(exec_error)) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot run the UCI engine ", path, ": ",
                     ErrnoText(exec_error), " (install Debian's stockfish)"));
  }
  const absl::Time deadline = absl::Now() + timeout;
  absl::Status started = engine->Send("uci");
  while (started.ok()) {
    auto line = engine->ReadLine(deadline);
    if (!line.ok()) {
      started = line.status();
      break;
    }
    absl::string_view text = *line;
    if (absl::ConsumePrefix(&text, "id name "))
      engine->name_ = std::string(text);
    if (*line == "uciok") break;
  }
  if (!started.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot start the UCI engine ", path, ": ", started.message()));
  }
  // One thread: node-limited single-threaded search is deterministic.
  RETURN_IF_ERROR(engine->Send("setoption name Threads value 1"));
  return engine;
}

UciEngine::~UciEngine() {
  if (to_engine_ >= 0) {
    (void)Send("quit");
    close(to_engine_);
  }
  // Its output stays open until it has exited, so that an engine still
  // writing does not die of (and print) a broken pipe.
  if (pid_ > 0) {
    // A second to quit, then SIGKILL: an engine that ignores "quit" (or never
    // spoke UCI) must not hang the caller.
    bool exited = false;
    for (int i = 0; i < 100 && !exited; ++i) {
      exited = waitpid(pid_, nullptr, WNOHANG) != 0;
      if (!exited) usleep(10000);
    }
    if (!exited) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  if (from_engine_ >= 0) close(from_engine_);
}

absl::Status UciEngine::Send(const std::string& line) {
  const std::string text = line + "\n";
  for (size_t done = 0; done < text.size();) {
    const ssize_t n = write(to_engine_, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      return absl::InternalError(
          absl::StrCat("the UCI engine ", path_, " closed its input"));
    }
    done += n;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> UciEngine::ReadLine(absl::Time deadline) {
  while (true) {
    if (const size_t end = pending_.find('\n'); end != std::string::npos) {
      std::string line = pending_.substr(0, end);
      pending_.erase(0, end + 1);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      return line;
    }
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) {
      return absl::DeadlineExceededError(
          absl::StrCat("the UCI engine ", path_, " did not answer within ",
                       absl::FormatDuration(timeout_)));
    }
    pollfd ready{from_engine_, POLLIN, 0};
    const int polled =
        poll(&ready, 1,
             static_cast<int>(std::ceil(
                 absl::ToDoubleMilliseconds(std::min(left, absl::Hours(1))))));
    if (polled < 0 && errno != EINTR)
      return absl::InternalError("poll() failed");
    if (polled <= 0) continue;  // Timed out or interrupted: the loop decides.
    char buffer[4096];
    const ssize_t n = read(from_engine_, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      return absl::InternalError(
          absl::StrCat("the UCI engine ", path_, " closed its output"));
    }
    pending_.append(buffer, n);
  }
}

absl::Status UciEngine::NewGame() {
  RETURN_IF_ERROR(Send("ucinewgame"));
  RETURN_IF_ERROR(Send("isready"));
  const absl::Time deadline = absl::Now() + timeout_;
  while (true) {
    ASSIGN_OR_RETURN(const std::string line, ReadLine(deadline));
    if (line == "readyok") return absl::OkStatus();
  }
}

absl::Status UciEngine::SetPosition(const std::vector<std::string>& moves) {
  return Send(moves.empty() ? std::string("position startpos")
                            : absl::StrCat("position startpos moves ",
                                           absl::StrJoin(moves, " ")));
}

absl::StatusOr<std::vector<std::string>> UciEngine::LegalMoves(
    const std::vector<std::string>& moves) {
  RETURN_IF_ERROR(SetPosition(moves));
  RETURN_IF_ERROR(Send("go perft 1"));
  const absl::Time deadline = absl::Now() + timeout_;
  std::vector<std::string> legal;
  while (true) {
    ASSIGN_OR_RETURN(const std::string line, ReadLine(deadline));
    if (absl::StartsWith(line, "Nodes searched")) return legal;
    const std::vector<std::string> parts = absl::StrSplit(line, ": ");
    if (parts.size() == 2 && parts[1] == "1") legal.push_back(parts[0]);
  }
}

absl::StatusOr<std::vector<ScoredMove>> UciEngine::Search(
    const std::vector<std::string>& moves, int nodes, int lines) {
  if (lines != multipv_) {
    RETURN_IF_ERROR(Send(absl::StrCat("setoption name MultiPV value ", lines)));
    multipv_ = lines;
  }
  RETURN_IF_ERROR(SetPosition(moves));
  RETURN_IF_ERROR(Send(absl::StrCat("go nodes ", nodes)));
  const absl::Time deadline = absl::Now() + timeout_;
  std::map<int, ScoredMove> by_rank;  // The deepest report of each line wins.
  while (true) {
    ASSIGN_OR_RETURN(const std::string line, ReadLine(deadline));
    if (absl::StartsWith(line, "bestmove")) break;
    if (!absl::StartsWith(line, "info ")) continue;
    const std::vector<std::string> words =
        absl::StrSplit(line, ' ', absl::SkipEmpty());
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
