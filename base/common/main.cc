#include "base/common/main.h"

#include <unistd.h>

#include <cstdio>
#include <exception>
#include <filesystem>

#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "base/common/status_macros.h"

namespace sparse_layers {
namespace {

std::string& ProgramName() {
  static std::string* name = new std::string("program");
  return *name;
}

// The first non-empty line: c10::Error appends "Exception raised from ..." and
// a backtrace after the message.
std::string FirstLine(absl::string_view message) {
  for (absl::string_view line : absl::StrSplit(message, '\n')) {
    if (!absl::StripAsciiWhitespace(line).empty()) {
      return std::string(absl::StripAsciiWhitespace(line));
    }
  }
  return "unknown error";
}

// The message of the exception in flight (call inside a catch or terminate).
std::string CurrentExceptionMessage() {
  try {
    throw;
  } catch (const std::exception& e) {
    return FirstLine(e.what());
  } catch (...) {
    return "unknown exception";
  }
}

[[noreturn]] void TerminateWithErrorLine() {
  std::string message = "terminated";
  if (std::current_exception()) message = CurrentExceptionMessage();
  ExitWithError(absl::InternalError(message));
  std::fflush(stderr);
  _exit(1);  // Not exit(): other threads may still be running.
}

}  // namespace

std::vector<std::string> ParseMainFlags(int argc, char** argv,
                                        absl::string_view usage) {
  absl::SetProgramUsageMessage(usage);
  std::vector<char*> positional = absl::ParseCommandLine(argc, argv);
  SetProgramName(positional.empty() ? "" : positional[0]);
  return std::vector<std::string>(positional.begin() + 1, positional.end());
}

void SetProgramName(absl::string_view argv0) {
  const size_t slash = argv0.rfind('/');
  ProgramName() = std::string(
      slash == absl::string_view::npos ? argv0 : argv0.substr(slash + 1));
}

int ExitWithError(const absl::Status& status) {
  absl::FPrintF(stderr, "%s: error: %s\n", ProgramName(),
                FirstLine(status.message()));
  return 1;
}

int RunMain(absl::FunctionRef<absl::Status()> body) {
  std::set_terminate(TerminateWithErrorLine);
  try {
    const absl::Status status = body();
    return status.ok() ? 0 : ExitWithError(status);
  } catch (...) {
    return ExitWithError(absl::InternalError(CurrentExceptionMessage()));
  }
}

absl::Status FirstError(std::initializer_list<absl::Status> checks) {
  for (const absl::Status& check : checks) {
    RETURN_IF_ERROR(check);
  }
  return absl::OkStatus();
}

absl::Status FilesExist(absl::string_view what,
                        const std::vector<std::string>& paths) {
  for (const std::string& path : paths) {
    std::error_code error;
    if (std::filesystem::is_directory(path, error)) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": ", path, " is a directory, not a file"));
    }
    if (!std::filesystem::is_regular_file(path, error) ||
        access(path.c_str(), R_OK) != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": ", path, " is not a readable file"));
    }
  }
  return absl::OkStatus();
}

}  // namespace sparse_layers
