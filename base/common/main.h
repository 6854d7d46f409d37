// What every binary's main() shares, without LibTorch: flag parsing, the
// one-line error exit and the top-level handler that keeps exceptions from
// escaping a main.
#ifndef SPARSE_LAYERS_BASE_COMMON_MAIN_H_
#define SPARSE_LAYERS_BASE_COMMON_MAIN_H_

#include <initializer_list>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace sparse_layers {

// Parses Abseil flags (exits on --help or a bad flag), names the program in
// error lines, and returns the positional arguments (without argv[0]).
// Binaries that use LibTorch call InitMain (ops/backend/torch_init.h)
// instead.
std::vector<std::string> ParseMainFlags(int argc, char** argv,
                                        absl::string_view usage);

// Names the program in error lines; for mains that parse their own flags.
void SetProgramName(absl::string_view argv0);

// Prints `status` as one line "<program>: error: <message>" on stderr and
// returns the exit code 1.
int ExitWithError(const absl::Status& status);

// Runs a main's body and returns its exit code: 0, or 1 after one error line
// for a non-OK status or for any exception that escapes it (a c10::Error from
// a layer, a std::exception, anything else), of which only the first line of
// the message is printed (no backtrace). An exception that escapes another
// thread ends the process the same way instead of aborting it.
int RunMain(absl::FunctionRef<absl::Status()> body);

// Flag checks a main runs before any work, combined with FirstError; each
// error names the flag, e.g. "--samples must be >= 1, got 0".

// The first non-OK status of `checks`, or OK.
absl::Status FirstError(std::initializer_list<absl::Status> checks);

// A string or list flag that must be given.
template <typename T>
absl::Status RequiredFlag(const absl::Flag<T>& flag) {
  if (!absl::GetFlag(flag).empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "--", absl::GetFlagReflectionHandle(flag).Name(), " is required"));
}

// A numeric flag within [minimum, maximum] (NaN is outside).
template <typename T, typename U>
absl::Status FlagInRange(const absl::Flag<T>& flag, U minimum, U maximum) {
  const T value = absl::GetFlag(flag);
  if (value >= minimum && value <= maximum) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("--", absl::GetFlagReflectionHandle(flag).Name(),
                   " must be in [", minimum, ", ", maximum, "], got ", value));
}

// A numeric flag at least `minimum` (NaN is not).
template <typename T, typename U>
absl::Status FlagAtLeast(const absl::Flag<T>& flag, U minimum) {
  const T value = absl::GetFlag(flag);
  if (value >= minimum) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("--", absl::GetFlagReflectionHandle(flag).Name(),
                   " must be >= ", minimum, ", got ", value));
}

// Every path in `paths` names a readable regular file; errors start with
// `what` (a flag, "--data", or a positional argument's role, "fit").
absl::Status FilesExist(absl::string_view what,
                        const std::vector<std::string>& paths);

// Every path of a string or list flag names a readable regular file (an
// unset flag passes; pair with RequiredFlag).
inline absl::Status FlagFilesExist(
    const absl::Flag<std::vector<std::string>>& flag) {
  return FilesExist(
      absl::StrCat("--", absl::GetFlagReflectionHandle(flag).Name()),
      absl::GetFlag(flag));
}
inline absl::Status FlagFilesExist(const absl::Flag<std::string>& flag) {
  const std::string path = absl::GetFlag(flag);
  if (path.empty()) return absl::OkStatus();
  return FilesExist(
      absl::StrCat("--", absl::GetFlagReflectionHandle(flag).Name()), {path});
}

// The fitted layers a tool reads (its positional arguments): at least one
// ("no fits given: <tool> needs at least one <kind> (.pt)"), each a readable
// file ("fit: <path> ...").
inline absl::Status FitsGiven(absl::string_view tool, absl::string_view kind,
                              const std::vector<std::string>& paths) {
  if (paths.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "no fits given: ", tool, " needs at least one ", kind, " (.pt)"));
  }
  return FilesExist("fit", paths);
}

// RequiredFlag, then FlagFilesExist.
template <typename T>
absl::Status RequiredFile(const absl::Flag<T>& flag) {
  if (absl::Status s = RequiredFlag(flag); !s.ok()) return s;
  return FlagFilesExist(flag);
}

}  // namespace sparse_layers

#endif  // SPARSE_LAYERS_BASE_COMMON_MAIN_H_
