#include "analysis/claims/tidy_table.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/common/status_macros.h"

namespace sparse_layers::claims {
namespace {

// Splits CSV text into records of fields (RFC 4180 quoting; \r\n accepted).
absl::StatusOr<std::vector<std::vector<std::string>>> SplitRecords(
    absl::string_view text, absl::string_view source) {
  std::vector<std::vector<std::string>> records;
  std::vector<std::string> record;
  std::string field;
  bool quoted = false, field_started = false;
  int line = 1;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"') {
        if (i + 1 < text.size() && text[i + 1] == '"') {
          field += '"';
          ++i;
        } else {
          quoted = false;
        }
      } else {
        if (c == '\n') ++line;
        field += c;
      }
      continue;
    }
    if (c == '"' && field.empty() && !field_started) {
      quoted = true;
      field_started = true;
    } else if (c == ',') {
      record.push_back(std::move(field));
      field.clear();
      field_started = false;
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      record.push_back(std::move(field));
      field.clear();
      field_started = false;
      if (!(record.size() == 1 && record[0].empty()))
        records.push_back(std::move(record));
      record.clear();
      ++line;
    } else {
      field += c;
      field_started = true;
    }
  }
  if (quoted)
    return absl::InvalidArgumentError(
        absl::StrCat(source, ":", line, ": unterminated quote"));
  if (!field.empty() || !record.empty()) {
    record.push_back(std::move(field));
    records.push_back(std::move(record));
  }
  return records;
}

}  // namespace

absl::StatusOr<TidyTable> TidyTable::Parse(absl::string_view text,
                                           absl::string_view source) {
  ASSIGN_OR_RETURN(auto records, SplitRecords(text, source));
  if (records.empty())
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": empty table (no header)"));
  TidyTable table;
  table.name_ = std::string(source);
  table.header_ = std::move(records[0]);
  for (size_t i = 1; i < records.size(); ++i) {
    if (records[i].size() != table.header_.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ": record ", i + 1, " has ", records[i].size(),
                       " fields, the header ", table.header_.size()));
    }
    table.rows_.push_back(std::move(records[i]));
  }
  return table;
}

absl::StatusOr<TidyTable> TidyTable::ReadConcatenated(
    const std::vector<std::string>& paths) {
  if (paths.empty()) return absl::InvalidArgumentError("no files for a table");
  TidyTable out;
  for (const std::string& path : paths) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot be read"));
    std::stringstream text;
    text << in.rdbuf();
    ASSIGN_OR_RETURN(auto part, Parse(text.str(), path));
    if (out.header_.empty()) {
      out.header_ = part.header_;
    } else if (part.header_ != out.header_) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": header '", absl::StrJoin(part.header_, ","),
                       "' differs from ", paths[0], "'s '",
                       absl::StrJoin(out.header_, ","), "'"));
    }
    for (auto& row : part.rows_) out.rows_.push_back(std::move(row));
  }
  return out;
}

bool TidyTable::HasColumn(absl::string_view column) const {
  for (const std::string& h : header_) {
    if (h == column) return true;
  }
  return false;
}

absl::StatusOr<int> TidyTable::Column(absl::string_view column) const {
  for (size_t i = 0; i < header_.size(); ++i) {
    if (header_[i] == column) return static_cast<int>(i);
  }
  return absl::NotFoundError(
      absl::StrCat("table ", name_, " has no column '", column,
                   "' (columns: ", absl::StrJoin(header_, ","), ")"));
}

std::string CsvField(absl::string_view field) {
  if (field.find_first_of(",\"\n\r") == absl::string_view::npos)
    return std::string(field);
  std::string out = "\"";
  for (char c : field) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string TidyTable::ToCsv() const {
  std::string out;
  auto append = [&out](const std::vector<std::string>& fields) {
    for (size_t i = 0; i < fields.size(); ++i)
      absl::StrAppend(&out, i ? "," : "", CsvField(fields[i]));
    out += '\n';
  };
  append(header_);
  for (const auto& row : rows_) append(row);
  return out;
}

absl::StatusOr<double> ParseNumber(absl::string_view cell,
                                   absl::string_view where) {
  double value;
  const absl::string_view stripped = absl::StripAsciiWhitespace(cell);
  if (stripped.empty() || !absl::SimpleAtod(stripped, &value) ||
      !std::isfinite(value)) {
    // inf as much as NaN: a diverged run or a division by zero upstream.
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": '", cell, "' is not a finite number"));
  }
  return value;
}

}  // namespace sparse_layers::claims
