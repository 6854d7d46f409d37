#include "analysis/claims/section_checks.h"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "analysis/claims/claims_engine.h"
#include "analysis/claims/verdict_files.h"
#include "base/common/file_io.h"
#include "base/common/status_macros.h"

namespace sparse_layers::claims {
namespace {

absl::Status Fail(const TableCheck& check, const TidyTable& table,
                  absl::string_view what) {
  return absl::FailedPreconditionError(absl::StrCat(
      table.name(), ": ", what,
      check.why().empty() ? "" : absl::StrCat(" (", check.why(), ")")));
}

std::string RowText(const std::vector<std::string>& row) {
  return absl::StrJoin(row, ",");
}

// The expected values of a ColumnValues, "$seeds" expanded.
std::set<std::string> Expected(const ColumnValues& values,
                               const std::vector<std::string>& seeds) {
  std::set<std::string> expected;
  for (const std::string& value : values.values()) {
    if (value == "$seeds") {
      expected.insert(seeds.begin(), seeds.end());
    } else {
      expected.insert(value);
    }
  }
  return expected;
}

// Whether a check keeps only the rows of an arm (column=value) not run.
bool FiltersOnArmNotRun(const TableCheck& check,
                        const std::vector<std::string>& arms_not_run) {
  for (const Filter& filter : check.where()) {
    const std::string arm = absl::StrCat(filter.column(), "=", filter.value());
    if (std::find(arms_not_run.begin(), arms_not_run.end(), arm) !=
        arms_not_run.end()) {
      return true;
    }
  }
  return false;
}

}  // namespace

absl::Status CheckTable(const TableCheck& check, const TidyTable& table,
                        const std::vector<std::string>& seeds) {
  std::vector<const std::vector<std::string>*> rows;
  for (const auto& row : table.rows())
    if (PassesFilters(table, row, check.where())) rows.push_back(&row);
  if (check.rows() > 0 && static_cast<int>(rows.size()) != check.rows()) {
    return Fail(check, table,
                absl::StrCat(rows.size(), " rows, expected ", check.rows()));
  }
  if (rows.empty()) return Fail(check, table, "no rows");
  for (const ColumnValues& values : check.values()) {
    ASSIGN_OR_RETURN(const int column, table.Column(values.column()));
    std::set<std::string> found;
    for (const auto* row : rows) found.insert((*row)[column]);
    if (values.values_size() > 0) {
      const std::set<std::string> expected = Expected(values, seeds);
      if (found != expected) {
        return Fail(
            check, table,
            absl::StrCat(values.column(), " has {", absl::StrJoin(found, ", "),
                         "}, expected {", absl::StrJoin(expected, ", "), "}"));
      }
    }
    if (values.count() > 0 &&
        static_cast<int>(found.size()) != values.count()) {
      return Fail(check, table,
                  absl::StrCat(values.column(), " has ", found.size(),
                               " distinct values, expected ", values.count()));
    }
  }
  if (check.complete_size() > 0) {
    // Each axis is a column, or columns joined by '+' whose value tuples form
    // one axis (a class nested in its task).
    std::vector<std::vector<int>> columns;
    std::vector<std::set<std::string>> distinct(check.complete_size());
    for (const std::string& axis : check.complete()) {
      columns.emplace_back();
      for (absl::string_view name : absl::StrSplit(axis, '+')) {
        ASSIGN_OR_RETURN(const int column, table.Column(name));
        columns.back().push_back(column);
      }
    }
    std::map<std::vector<std::string>, int> count;
    for (const auto* row : rows) {
      std::vector<std::string> key;
      for (size_t i = 0; i < columns.size(); ++i) {
        std::vector<std::string> parts;
        for (int column : columns[i]) parts.push_back((*row)[column]);
        key.push_back(absl::StrJoin(parts, "+"));
        distinct[i].insert(key.back());
      }
      ++count[key];
    }
    size_t cells = 1;
    for (const auto& values : distinct) cells *= values.size();
    if (count.size() != cells) {
      return Fail(check, table,
                  absl::StrCat(count.size(), " of the ", cells, " (",
                               absl::StrJoin(check.complete(), " x "),
                               ") combinations present"));
    }
    if (check.per_combination() > 0) {
      for (const auto& [key, n] : count) {
        if (n != check.per_combination()) {
          return Fail(
              check, table,
              absl::StrCat("(", absl::StrJoin(key, ", "), ") has ", n,
                           " rows, expected ", check.per_combination()));
        }
      }
    }
  }
  for (const Bound& bound : check.bounds()) {
    ASSIGN_OR_RETURN(const int column, table.Column(bound.column()));
    int max_column = -1;
    if (!bound.max_column().empty()) {
      ASSIGN_OR_RETURN(max_column, table.Column(bound.max_column()));
    }
    for (const auto* row : rows) {
      const std::string where =
          absl::StrCat(table.name(), " row ", RowText(*row));
      ASSIGN_OR_RETURN(const double value, ParseNumber((*row)[column], where));
      double max = bound.has_max() ? bound.max() : INFINITY;
      if (max_column >= 0) {
        ASSIGN_OR_RETURN(const double limit,
                         ParseNumber((*row)[max_column], where));
        max = std::min(max, limit);
      }
      if ((bound.has_min() && value < bound.min()) || value > max) {
        return Fail(check, table,
                    absl::StrCat(bound.column(), " = ", (*row)[column],
                                 " out of bounds in row ", RowText(*row)));
      }
    }
  }
  for (const GroupSum& sum : check.sums()) {
    ASSIGN_OR_RETURN(const int column, table.Column(sum.column()));
    std::vector<int> group_columns;
    for (const std::string& name : sum.group_by()) {
      ASSIGN_OR_RETURN(const int index, table.Column(name));
      group_columns.push_back(index);
    }
    std::map<std::vector<std::string>, double> totals;
    for (const auto* row : rows) {
      std::vector<std::string> key;
      for (int index : group_columns) key.push_back((*row)[index]);
      ASSIGN_OR_RETURN(
          const double value,
          ParseNumber((*row)[column],
                      absl::StrCat(table.name(), " row ", RowText(*row))));
      totals[key] += value;
    }
    for (const auto& [key, total] : totals) {
      if (std::abs(total - sum.sum()) > sum.tolerance()) {
        return Fail(check, table,
                    absl::StrCat(sum.column(), " sums to ", total, " in (",
                                 absl::StrJoin(key, ", "), "), expected ",
                                 sum.sum(), " ± ", sum.tolerance()));
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> CheckSection(const ClaimSet& claims,
                                         const std::string& section_dir,
                                         const std::vector<std::string>& seeds,
                                         int min_n) {
  auto path = [&](absl::string_view file) {
    return absl::StrCat(section_dir, "/", file);
  };
  std::vector<std::string> arms_not_run;
  struct stat not_run_info;
  if (stat(path(kArmsNotRunFile).c_str(), &not_run_info) == 0) {
    ASSIGN_OR_RETURN(const std::string text,
                     ReadFileToString(path(kArmsNotRunFile)));
    arms_not_run = absl::StrSplit(text, '\n', absl::SkipWhitespace());
  }
  std::map<std::string, TidyTable> tables;
  int skipped = 0;
  for (const TableCheck& check : claims.checks()) {
    if (FiltersOnArmNotRun(check, arms_not_run)) {
      ++skipped;
      continue;
    }
    if (!tables.count(check.table())) {
      ASSIGN_OR_RETURN(TidyTable table,
                       TidyTable::ReadConcatenated({path(check.table())}));
      table.set_name(check.table());
      tables.emplace(check.table(), std::move(table));
    }
    RETURN_IF_ERROR(CheckTable(check, tables.at(check.table()), seeds));
  }
  ASSIGN_OR_RETURN(const std::string section,
                   ReadFileToString(path("section.md")));
  for (const TableSpec& spec : claims.tables()) {
    if (!absl::StrContains(section, spec.title())) {
      return absl::FailedPreconditionError(
          absl::StrCat("section.md has no table '", spec.title(), "'"));
    }
  }
  // The line in which judge_claims lists the figures whose filters kept no
  // rows (a metric measured only where its gate passes).
  std::string not_drawn;
  for (absl::string_view line : absl::StrSplit(section, '\n')) {
    if (absl::StartsWith(line, "Not drawn (no rows): "))
      not_drawn = std::string(line);
  }
  std::vector<std::string> files(claims.files().begin(), claims.files().end());
  for (const FigureSpec& spec : claims.figures()) {
    if (!spec.title().empty() && absl::StrContains(not_drawn, spec.title())) {
      continue;
    }
    files.push_back(spec.file());
  }
  for (const std::string& file : files) {
    struct stat info;
    if (stat(path(file).c_str(), &info) != 0 || info.st_size == 0) {
      return absl::FailedPreconditionError(
          absl::StrCat(path(file), " is missing or empty"));
    }
  }
  ASSIGN_OR_RETURN(TidyTable verdicts,
                   TidyTable::ReadConcatenated({path("verdicts.csv")}));
  verdicts.set_name(path("verdicts.csv"));
  ASSIGN_OR_RETURN(const int verified, VerifyVerdicts(claims, verdicts, min_n));
  return absl::StrCat(
      section_dir, ": ", claims.checks_size() - skipped, " table checks",
      skipped > 0 ? absl::StrCat(" (", skipped, " on arms not run skipped)")
                  : "",
      ", ", claims.tables_size(), " tables, ", files.size(), " files, ",
      verified, " controls and claims with one verdict each",
      min_n > 0 ? absl::StrCat(" (n >= ", min_n, ")") : "", "\n");
}

}  // namespace sparse_layers::claims
