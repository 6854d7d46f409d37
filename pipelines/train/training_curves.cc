#include "pipelines/train/training_curves.h"

#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "pipelines/train/summary_table.h"

namespace sparse_layers::train {

absl::StatusOr<std::string> TrainingCurvesCsv(
    const std::vector<TrainingLog>& logs, int points) {
  if (points < 1) return absl::InvalidArgumentError("points must be >= 1");
  std::string csv, header_line;
  for (const TrainingLog& log : logs) {
    const std::string arm = StripSeedSuffix(log.run);
    if (arm == log.run) {
      return absl::InvalidArgumentError(
          absl::StrCat(log.run, ": not a seeded run name (<arm>_s<seed>)"));
    }
    const std::string seed = log.run.substr(arm.size() + 2);
    std::vector<std::string> lines =
        absl::StrSplit(log.text, '\n', absl::SkipEmpty());
    if (lines.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(log.run, ": empty log"));
    }
    const std::vector<std::string> header = absl::StrSplit(lines[0], ',');
    // An LM's log counts tokens and its train_loss; a fit's counts rows and
    // its train_nmse (or another train_* objective).
    int step = -1, tokens = -1, loss = -1;
    for (int i = 0; i < static_cast<int>(header.size()); ++i) {
      if (header[i] == "step") step = i;
      if (header[i] == "tokens" || header[i] == "rows") tokens = i;
      if (loss < 0 && absl::StartsWith(header[i], "train_")) loss = i;
    }
    if (step < 0 || tokens < 0 || loss < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          log.run,
          ": the log has no step, tokens (or rows) or train_* column"));
    }
    const bool perplexity = header[loss] == "train_loss";
    const std::string this_header =
        absl::StrCat("arm,seed,step,", header[tokens], ",", header[loss],
                     perplexity ? ",train_perplexity" : "", "\n");
    if (csv.empty()) {
      csv = header_line = this_header;
    } else if (this_header != header_line) {
      return absl::InvalidArgumentError(
          absl::StrCat(log.run, ": its log's columns differ from the first's"));
    }
    struct Row {
      std::string step, tokens;
      double loss;
    };
    std::vector<Row> rows;
    for (size_t i = 1; i < lines.size(); ++i) {
      const std::vector<std::string> cells = absl::StrSplit(lines[i], ',');
      if (cells.size() != header.size()) {
        return absl::InvalidArgumentError(
            absl::StrCat(log.run, ": line ", i + 1, " has ", cells.size(),
                         " fields, not ", header.size()));
      }
      double value;
      if (!absl::SimpleAtod(cells[loss], &value) || !std::isfinite(value)) {
        return absl::InvalidArgumentError(
            absl::StrCat(log.run, ": line ", i + 1, ": training loss '",
                         cells[loss], "' is not a finite number"));
      }
      rows.push_back({cells[step], cells[tokens], value});
    }
    const int n = static_cast<int>(rows.size());
    if (n < points) {
      return absl::InvalidArgumentError(absl::StrCat(
          log.run, ": ", n, " steps, fewer than the ", points, " points"));
    }
    for (int bin = 0; bin < points; ++bin) {
      // Steps [begin, end) of this bin: equal shares, the remainder spread.
      const int begin =
          static_cast<int>(static_cast<int64_t>(bin) * n / points);
      const int end =
          static_cast<int>(static_cast<int64_t>(bin + 1) * n / points);
      double sum = 0;
      for (int i = begin; i < end; ++i) sum += rows[i].loss;
      const double mean = sum / (end - begin);
      absl::StrAppend(
          &csv, arm, ",", seed, ",", rows[end - 1].step, ",",
          rows[end - 1].tokens, ",", absl::StrFormat("%.6g", mean),
          perplexity ? absl::StrFormat(",%.6g", std::exp(mean)) : "", "\n");
    }
  }
  return csv;
}

}  // namespace sparse_layers::train
