#include "analysis/claims/figures.h"

#include <sys/wait.h>
#include <unistd.h>

#include <map>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "analysis/claims/seed_means.h"
#include "analysis/claims/statistics.h"
#include "base/common/file_io.h"
#include "base/common/status_macros.h"

namespace sparse_layers::claims {
namespace {

// Runs argv, its stdout sent to stderr so it never mixes into the section.
absl::Status RunCommand(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const std::string& arg : argv)
    args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) return absl::InternalError("fork failed");
  if (pid == 0) {
    dup2(STDERR_FILENO, STDOUT_FILENO);
    execv(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  if (waitpid(pid, &status, 0) < 0)
    return absl::InternalError("waitpid failed");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return absl::InternalError(
        absl::StrCat(argv[0], " failed (status ", status, ")"));
  }
  return absl::OkStatus();
}

}  // namespace

// The --hline arguments of a figure's reference lines: a column's value is the
// mean over seeds of its one value per seed among the figure's rows; a line
// with rows of its own (table, where) is the mean over seeds of its column
// (the figure's y by default) there, as a claim's arm; a paper's number is a
// --paper_hline.
absl::StatusOr<std::vector<std::string>> ReferenceLineArguments(
    const FigureSpec& spec, const Tables& tables) {
  std::vector<std::string> arguments;
  for (const ReferenceLine& line : spec.reference_lines()) {
    auto error = [&](absl::string_view what) {
      return absl::InvalidArgumentError(absl::StrCat("figure ", spec.file(),
                                                     ": reference line '",
                                                     line.label(), "' ", what));
    };
    if (line.label().empty()) return error("has no label");
    const bool own_rows = !line.table().empty() || line.where_size() > 0;
    if (line.average_over_size() > 0 && !own_rows)
      return error("averages over columns but has no rows of its own");
    const std::string table_name =
        line.table().empty() ? spec.table() : line.table();
    const auto found = tables.find(table_name);
    if (found == tables.end()) return error("reads no table " + table_name);
    const TidyTable& table = found->second;
    const std::string seed_column = SeedColumnOrDefault(spec.seed_column());
    double value = line.value();
    if (line.paper() && line.source_case() != ReferenceLine::kValue)
      return error("is the paper's number: it needs a value");
    if (line.source_case() == ReferenceLine::kValue) {
      if (own_rows) return error("has a value and rows: one or the other");
    } else if (own_rows) {
      // As JudgeClaim reads an arm: the number its control compares with.
      const std::string metric =
          line.column().empty() ? spec.y() : line.column();
      auto by_seed = SeedMeans(table, line.where(), seed_column, "", "", "", "",
                               metric, line.average_over());
      if (!by_seed.ok()) return error(by_seed.status().message());
      value = MeanInterval(SeedValues(*by_seed), kConfidence).estimate;
    } else if (line.source_case() == ReferenceLine::kColumn) {
      ASSIGN_OR_RETURN(const int column, table.Column(line.column()));
      ASSIGN_OR_RETURN(const int seed_index, table.Column(seed_column));
      std::map<std::string, double> by_seed;
      for (const auto& row : table.rows()) {
        if (!PassesFilters(table, row, spec.where())) continue;
        ASSIGN_OR_RETURN(const double cell,
                         ParseNumber(row[column], table.name()));
        const auto [it, added] = by_seed.emplace(row[seed_index], cell);
        if (!added && it->second != cell) {
          return error(absl::StrCat("reads column ", line.column(),
                                    ", which has several values for seed ",
                                    row[seed_index],
                                    " (a per-level metric, not a reference)"));
        }
      }
      if (by_seed.empty()) return error("has no rows");
      value = MeanInterval(SeedValues(by_seed), kConfidence).estimate;
    } else {
      return error("needs a column, a value or rows of its own");
    }
    arguments.push_back(absl::StrCat(
        line.paper() ? "--paper_hline=" : "--hline=", FormatNumber(value, 8),
        ":", line.label()));
  }
  return arguments;
}

absl::StatusOr<std::string> DrawFigures(const ClaimSet& claims,
                                        const Tables& tables,
                                        const RenderOptions& options) {
  std::string out;
  if (claims.figures_size() > 0) {
    std::vector<std::string> written, scatters, heat_maps, empty;
    for (const FigureSpec& spec : claims.figures()) {
      const bool heat_map = !spec.value().empty();
      if (heat_map && options.heatmap_script.empty())
        return absl::InvalidArgumentError(
            "the claims file has heat maps: pass --plot_heatmap");
      if (!heat_map && options.plot_script.empty())
        return absl::InvalidArgumentError(
            "the claims file has figures: pass --plot");
      // A heat map's rows are the groups of its points, its cells their means.
      FigureSpec points_spec = spec;
      if (heat_map) {
        points_spec.set_group(spec.y());
        points_spec.set_y(spec.value());
      }
      ASSIGN_OR_RETURN(const TidyTable points,
                       FigurePoints(points_spec, tables));
      // Its filters select nothing (a base not run), as a table's "-" cells.
      if (points.rows().empty()) {
        empty.push_back(spec.title());
        continue;
      }
      std::string stem = spec.file();
      if (stem.size() > 4 && stem.substr(stem.size() - 4) == ".svg")
        stem.resize(stem.size() - 4);
      const std::string points_path =
          absl::StrCat(options.out_dir, "/", stem, ".points.csv");
      RETURN_IF_ERROR(WriteFileAtomically(points_path, points.ToCsv()));
      const std::string file_path =
          absl::StrCat(options.out_dir, "/", spec.file());
      const std::string xlabel =
          spec.xlabel().empty() ? spec.x() : spec.xlabel();
      const std::string ylabel =
          spec.ylabel().empty() ? spec.y() : spec.ylabel();
      std::vector<std::string> argv;
      if (heat_map) {
        argv = {options.heatmap_script,
                "--csv=" + points_path,
                "--x=" + spec.x(),
                "--y=" + spec.y(),
                "--value=" + spec.value() + "_mean",
                "--out=" + file_path,
                "--title=" + spec.title(),
                "--xlabel=" + xlabel,
                "--ylabel=" + ylabel};
      } else {
        argv = {options.plot_script, "--csv=" + points_path, "--x=" + spec.x(),
                "--y=" + spec.y() + "_mean"};
        if (spec.points()) {
          argv.push_back("--points");
        } else {
          argv.push_back("--ylow=" + spec.y() + "_ci_low");
          argv.push_back("--yhigh=" + spec.y() + "_ci_high");
        }
        argv.insert(argv.end(),
                    {"--group=" + spec.group(), "--out=" + file_path,
                     "--title=" + spec.title(), "--xlabel=" + xlabel,
                     "--ylabel=" + ylabel});
        if (spec.logx()) argv.push_back("--logx");
        if (spec.logy()) argv.push_back("--logy");
        if (spec.integer_x()) argv.push_back("--integer_x");
        ASSIGN_OR_RETURN(const std::vector<std::string> lines,
                         ReferenceLineArguments(spec, tables));
        argv.insert(argv.end(), lines.begin(), lines.end());
      }
      if (auto status = RunCommand(argv); !status.ok()) {
        return absl::Status(
            status.code(),
            absl::StrCat("figure ", spec.file(), ": ", status.message()));
      }
      (heat_map        ? heat_maps
       : spec.points() ? scatters
                       : written)
          .push_back(absl::StrCat(spec.title(), " (", file_path, ")"));
    }
    if (!written.empty()) {
      absl::StrAppend(&out, "Figures (seed means with 95% CI error bars): ",
                      absl::StrJoin(written, "; "), ".\n\n");
    }
    if (!scatters.empty()) {
      absl::StrAppend(&out, "Maps (one point per row): ",
                      absl::StrJoin(scatters, "; "), ".\n\n");
    }
    if (!heat_maps.empty()) {
      absl::StrAppend(&out, "Heat maps (each cell a mean over its rows): ",
                      absl::StrJoin(heat_maps, "; "), ".\n\n");
    }
    if (!empty.empty()) {
      absl::StrAppend(&out, "Not drawn (no rows): ", absl::StrJoin(empty, "; "),
                      ".\n\n");
    }
  }
  return out;
}

}  // namespace sparse_layers::claims
