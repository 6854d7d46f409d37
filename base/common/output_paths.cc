#include "base/common/output_paths.h"

#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"

namespace sparse_layers {
namespace {

// The path as the file system resolves it; the lexical form when it cannot.
std::filesystem::path Resolved(const std::string& path) {
  std::error_code error;
  std::filesystem::path resolved =
      std::filesystem::weakly_canonical(std::filesystem::absolute(path), error);
  return error ? std::filesystem::path(path).lexically_normal() : resolved;
}

}  // namespace

absl::Status OutputIsNotAnInput(absl::string_view what,
                                const std::string& output,
                                const std::vector<std::string>& inputs) {
  if (output.empty()) return absl::OkStatus();
  const std::filesystem::path out = Resolved(output);
  for (const std::string& input : inputs) {
    if (input.empty() || Resolved(input) != out) continue;
    return absl::InvalidArgumentError(absl::StrCat(what, " ", output,
                                                   " is also an input (", input,
                                                   "); write it elsewhere"));
  }
  return absl::OkStatus();
}

}  // namespace sparse_layers
