#include "analysis/claims/seed_means.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "analysis/claims/statistics.h"
#include "base/common/status_macros.h"

namespace sparse_layers::claims {

std::string FormatNumber(double value, int digits) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  // Counts (parameters, tokens) print whole, not as 1.1526e+05.
  if (value == std::floor(value) && std::fabs(value) < 1e15) {
    return absl::StrFormat("%.0f", value);
  }
  return absl::StrFormat("%.*g", digits, value);
}

namespace {

// Distinct combinations of `columns` among rows passing `where`, in order of
// first appearance.
absl::StatusOr<std::vector<std::vector<std::string>>> Keys(
    const TidyTable& table,
    const google::protobuf::RepeatedPtrField<Filter>& where,
    const std::vector<std::string>& columns) {
  std::vector<int> indices;
  for (const std::string& column : columns) {
    ASSIGN_OR_RETURN(auto index, table.Column(column));
    indices.push_back(index);
  }
  std::vector<std::vector<std::string>> keys;
  for (const auto& row : table.rows()) {
    if (!PassesFilters(table, row, where)) continue;
    std::vector<std::string> key;
    for (int i : indices) key.push_back(row[i]);
    if (std::find(keys.begin(), keys.end(), key) == keys.end())
      keys.push_back(key);
  }
  // Columns whose values are all numbers sort numerically (K, block, budget);
  // others keep their order of first appearance.
  for (int c = static_cast<int>(columns.size()) - 1; c >= 0; --c) {
    bool numeric = true;
    for (const auto& key : keys) {
      double unused;
      numeric = numeric && absl::SimpleAtod(key[c], &unused);
    }
    if (!numeric) continue;
    std::stable_sort(keys.begin(), keys.end(),
                     [c](const std::vector<std::string>& a,
                         const std::vector<std::string>& b) {
                       double x, y;
                       absl::SimpleAtod(a[c], &x);
                       absl::SimpleAtod(b[c], &y);
                       return x < y;
                     });
  }
  return keys;
}

google::protobuf::RepeatedPtrField<Filter> With(
    const google::protobuf::RepeatedPtrField<Filter>& where,
    const std::vector<std::string>& columns,
    const std::vector<std::string>& values) {
  google::protobuf::RepeatedPtrField<Filter> out = where;
  for (size_t i = 0; i < columns.size(); ++i) {
    Filter* filter = out.Add();
    filter->set_column(columns[i]);
    filter->set_value(values[i]);
  }
  return out;
}

}  // namespace

absl::StatusOr<std::string> RenderTable(const TableSpec& spec,
                                        const Tables& tables) {
  auto it = tables.find(spec.table());
  if (it == tables.end())
    return absl::NotFoundError(absl::StrCat("table spec '", spec.title(),
                                            "': no table ", spec.table()));
  const TidyTable& table = it->second;
  const int digits = spec.digits() > 0 ? spec.digits() : 4;
  const std::vector<std::string> row_columns(spec.rows().begin(),
                                             spec.rows().end());
  ASSIGN_OR_RETURN(auto row_keys, Keys(table, spec.where(), row_columns));
  if (spec.metrics().empty())
    return absl::InvalidArgumentError(
        absl::StrCat("table spec '", spec.title(), "': no metrics"));
  // Columns: the values of `columns` (one metric), else one per metric.
  std::vector<std::string> column_values;
  if (!spec.columns().empty()) {
    ASSIGN_OR_RETURN(auto keys, Keys(table, spec.where(), {spec.columns()}));
    for (const auto& key : keys) column_values.push_back(key[0]);
  }
  const std::vector<std::string> headings =
      spec.columns().empty() ? std::vector<std::string>(spec.metrics().begin(),
                                                        spec.metrics().end())
                             : column_values;
  std::string out = absl::StrCat("## ", spec.title(), "\n\n| ",
                                 absl::StrJoin(row_columns, " | "),
                                 row_columns.empty() ? "" : " | ",
                                 absl::StrJoin(headings, " | "), " | n |\n|");
  for (size_t i = 0; i < row_columns.size() + headings.size() + 1; ++i)
    out += "---|";
  out += "\n";
  for (const auto& key : row_keys) {
    const auto where = With(spec.where(), row_columns, key);
    std::vector<std::string> cells;
    int n_min = 1 << 30, n_max = 0;
    for (size_t c = 0; c < headings.size(); ++c) {
      const std::string& metric =
          spec.columns().empty() ? spec.metrics(c) : spec.metrics(0);
      const auto cell_where =
          spec.columns().empty() ? where
                                 : With(where, {spec.columns()}, {headings[c]});
      auto by_seed =
          SeedMeans(table, cell_where, SeedColumnOrDefault(spec.seed_column()),
                    "", "", "", "", metric, spec.average_over());
      if (absl::IsNotFound(by_seed.status()) &&
          by_seed.status().message().find("no rows") != std::string::npos) {
        cells.push_back("-");
        continue;
      }
      if (!by_seed.ok())
        return absl::Status(by_seed.status().code(),
                            absl::StrCat("table spec '", spec.title(),
                                         "': ", by_seed.status().message()));
      const Interval interval = MeanInterval(SeedValues(*by_seed), kConfidence);
      n_min = std::min(n_min, interval.n);
      n_max = std::max(n_max, interval.n);
      cells.push_back(
          interval.n < 2
              ? FormatNumber(interval.estimate, digits)
              : absl::StrCat(
                    FormatNumber(interval.estimate, digits), " ± ",
                    FormatNumber(interval.high - interval.estimate, 2)));
    }
    const std::string n =
        n_max == 0 ? "-"
                   : (n_min == n_max ? absl::StrCat(n_min)
                                     : absl::StrCat(n_min, "-", n_max));
    absl::StrAppend(&out, "| ", absl::StrJoin(key, " | "),
                    key.empty() ? "" : " | ", absl::StrJoin(cells, " | "),
                    " | ", n, " |\n");
  }
  if (!spec.caption().empty())
    absl::StrAppend(&out, "\n", spec.caption(), "\n");
  return out;
}

absl::StatusOr<TidyTable> FigurePoints(const FigureSpec& spec,
                                       const Tables& tables) {
  auto it = tables.find(spec.table());
  if (it == tables.end())
    return absl::NotFoundError(
        absl::StrCat("figure ", spec.file(), ": no table ", spec.table()));
  const TidyTable& table = it->second;
  ASSIGN_OR_RETURN(auto groups, Keys(table, spec.where(), {spec.group()}));
  std::string csv =
      absl::StrCat(spec.group(), ",", spec.x(), ",", spec.y(), "_mean,",
                   spec.y(), "_ci_low,", spec.y(), "_ci_high,n\n");
  for (const auto& group : groups) {
    const auto where = With(spec.where(), {spec.group()}, group);
    ASSIGN_OR_RETURN(auto levels, Levels(table, where, spec.x()));
    for (const std::string& x : levels) {
      auto by_seed =
          SeedMeans(table, where, SeedColumnOrDefault(spec.seed_column()), "",
                    "", spec.x(), x, spec.y(), spec.average_over());
      if (!by_seed.ok())
        return absl::Status(by_seed.status().code(),
                            absl::StrCat("figure ", spec.file(), ": ",
                                         by_seed.status().message()));
      const Interval interval = MeanInterval(SeedValues(*by_seed), kConfidence);
      const bool bounded = interval.n >= 2;
      absl::StrAppend(&csv, CsvField(group[0]), ",", x, ",",
                      FormatNumber(interval.estimate, 8), ",",
                      bounded ? FormatNumber(interval.low, 8) : "", ",",
                      bounded ? FormatNumber(interval.high, 8) : "", ",",
                      interval.n, "\n");
    }
  }
  return TidyTable::Parse(csv, spec.file());
}

}  // namespace sparse_layers::claims
