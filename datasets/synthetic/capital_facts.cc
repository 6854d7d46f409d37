#include "datasets/synthetic/capital_facts.h"

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace sparse_layers::datasets {

absl::StatusOr<std::vector<CapitalFact>> ParseCapitalFacts(
    absl::string_view csv, absl::string_view source, size_t min_facts) {
  std::vector<absl::string_view> lines = absl::StrSplit(csv, '\n');
  while (!lines.empty() && absl::StripAsciiWhitespace(lines.back()).empty()) {
    lines.pop_back();
  }
  if (lines.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": empty"));
  }
  const absl::string_view header_line = absl::StripAsciiWhitespace(lines[0]);
  const std::vector<std::string> header = absl::StrSplit(header_line, ',');
  auto column = [&](absl::string_view name, absl::string_view alias) {
    for (size_t i = 0; i < header.size(); ++i) {
      if (header[i] == name || header[i] == alias) return static_cast<int>(i);
    }
    return -1;
  };
  const int answer_column = column("answer", "capital");
  const int subject_column = column("subject", "state");
  if (answer_column < 0 || subject_column < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, ": header '", header_line,
        "' needs an answer column (answer or capital) and a subject column "
        "(subject or state)"));
  }
  std::vector<CapitalFact> facts;
  for (size_t row = 1; row < lines.size(); ++row) {
    const std::vector<std::string> fields =
        absl::StrSplit(absl::StripAsciiWhitespace(lines[row]), ',');
    const std::string where = absl::StrCat(source, ":", row + 1);
    if (fields.size() != header.size()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": ", fields.size(),
                                                     " fields, the header has ",
                                                     header.size()));
    }
    if (fields[answer_column].empty() || fields[subject_column].empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": empty answer or subject"));
    }
    facts.push_back({fields[subject_column], fields[answer_column]});
  }
  if (facts.size() < min_facts) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, ": ", facts.size(), " facts, fewer than ", min_facts));
  }
  return facts;
}

}  // namespace sparse_layers::datasets
