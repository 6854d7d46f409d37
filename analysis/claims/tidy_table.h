// Tidy CSV tables for the claims engine: one row per observation (arm, seed,
// level), columns named by the header. Fields may be quoted ("a, b" with "" for
// a quote), as verdicts.csv writes statements.
#ifndef SPARSE_LAYERS_ANALYSIS_CLAIMS_TIDY_TABLE_H_
#define SPARSE_LAYERS_ANALYSIS_CLAIMS_TIDY_TABLE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace sparse_layers::claims {

class TidyTable {
 public:
  // Parses CSV text; `source` names it in errors. Every row must have the
  // header's field count.
  static absl::StatusOr<TidyTable> Parse(absl::string_view text,
                                         absl::string_view source);
  // Reads and concatenates files with identical headers.
  static absl::StatusOr<TidyTable> ReadConcatenated(
      const std::vector<std::string>& paths);

  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }
  const std::vector<std::string>& header() const { return header_; }
  const std::vector<std::vector<std::string>>& rows() const { return rows_; }
  bool HasColumn(absl::string_view column) const;
  // Index of `column`, or NotFound naming the table and its columns.
  absl::StatusOr<int> Column(absl::string_view column) const;
  // Rows as CSV text (header first), quoting fields where needed.
  std::string ToCsv() const;

 private:
  std::string name_;
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

// One CSV field, quoted when it holds a comma, quote or newline.
std::string CsvField(absl::string_view field);

// Parses a number of a metric cell; anything but a finite number (nan, inf,
// empty) is an error naming the cell.
absl::StatusOr<double> ParseNumber(absl::string_view cell,
                                   absl::string_view where);

}  // namespace sparse_layers::claims

#endif  // SPARSE_LAYERS_ANALYSIS_CLAIMS_TIDY_TABLE_H_
