#include "analysis/claims/section_renderer.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "tools/common/file_io.h"
#include "tools/common/status_macros.h"

namespace sparse_layers::claims {
namespace {

std::string Number(double value, int digits = 4) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  // Counts (parameters, tokens) print whole, not as 1.1526e+05.
  if (value == std::floor(value) && std::fabs(value) < 1e15) {
    return absl::StrFormat("%.0f", value);
  }
  return absl::StrFormat("%.*g", digits, value);
}

std::string Signed(double value, bool percent) {
  if (std::isinf(value)) return value > 0 ? "+inf" : "-inf";
  if (percent) return absl::StrFormat("%+.2f%%", 100.0 * value);
  return absl::StrFormat("%+.4g", value);
}

bool IsRelative(const Claim& claim) {
  return (claim.effect() == RELATIVE_DIFFERENCE ||
          claim.effect() == GAIN_RATIO) &&
         (claim.comparison() == BETTER || claim.comparison() == WITHIN ||
          claim.comparison() == NOT_WORSE);
}

// What the effect is, in words: "ce[mxd] - ce[transcoder]".
std::string EffectName(const Claim& claim) {
  auto side = [&](const std::string& arm, const std::string& metric) {
    return claim.arm_column().empty() ? metric
                                      : absl::StrCat(metric, "[", arm, "]");
  };
  const std::string a = side(claim.a(), claim.metric());
  std::string b;
  if (!claim.b_metric().empty()) {
    b = side(claim.b().empty() ? claim.a() : claim.b(), claim.b_metric());
  } else if (!claim.b().empty()) {
    b = side(claim.b(), claim.metric());
  } else {
    b = Number(claim.reference_value(), 6);
  }
  std::string effect = absl::StrCat(a, " - ", b);
  if (claim.effect() == RELATIVE_DIFFERENCE) {
    effect = absl::StrCat(a, " / ", b, " - 1");
  } else if (claim.effect() == GAIN_RATIO) {
    const std::string c = side(claim.baseline(), claim.metric());
    effect = absl::StrCat("(", a, " - ", c, ") / (", b, " - ", c, ") - 1");
  }
  switch (claim.comparison()) {
    case MONOTONE:
      return absl::StrCat("slope of (", effect, ") per ",
                          claim.log_over() ? "doubling" : "unit", " of ",
                          claim.over());
    case CORRELATION:
      return absl::StrCat("Pearson r of ", a, " and ", b, " across ",
                          claim.over());
    default:
      return effect;
  }
}

// `unit` names what n counts: seeds, or the claim's own seed_column.
std::string IntervalText(const LevelResult& level, bool percent,
                         const std::string& seed_column) {
  const Interval& e = level.effect;
  std::string bounds;
  if (std::isinf(e.low) || std::isinf(e.high) || std::isnan(e.estimate) ||
      (level.method == IntervalMethod::kFisherZ && e.n < 2)) {
    bounds = "no interval";
  } else {
    bounds = absl::StrCat(Number(100.0 * level.confidence, 4), "% CI [",
                          Signed(e.low, percent), ", ", Signed(e.high, percent),
                          "]");
  }
  const std::string unit = seed_column.empty() || seed_column == "seed"
                               ? (e.n == 1 ? " seed" : " seeds")
                               : absl::StrCat(" (", seed_column, ")");
  return absl::StrCat(Signed(e.estimate, percent), ", ", bounds, ", n = ", e.n,
                      unit, " (", IntervalMethodName(level.method), ")");
}

// How many of `judged` empirical claims' verdicts chance alone would make
// wrong.
std::string ChanceLine(int judged) {
  return absl::StrFormat(
      "Error rate: %d empirical claims judged (not NOT TESTABLE), each at a "
      "95%% family-wise level over its levels (Bonferroni): each verdict "
      "(HOLDS or DOES NOT HOLD) is wrong with probability at most 5%%, so at "
      "most about %.2g wrong verdicts are expected by chance alone. Not "
      "corrected across claims.",
      judged, 0.05 * judged);
}

std::string Bold(Verdict verdict) {
  return absl::StrCat("**", VerdictName(verdict), "**");
}

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

// Distinct combinations of `columns` among rows passing `where`, in order of
// first appearance.
absl::StatusOr<std::vector<std::vector<std::string>>> Keys(
    const TidyTable& table,
    const google::protobuf::RepeatedPtrField<Filter>& where,
    const std::vector<std::string>& columns) {
  std::vector<int> indices;
  for (const std::string& column : columns) {
    auto index = table.Column(column);
    if (!index.ok()) return index.status();
    indices.push_back(*index);
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
  auto row_keys = Keys(table, spec.where(), row_columns);
  if (!row_keys.ok()) return row_keys.status();
  if (spec.metrics().empty())
    return absl::InvalidArgumentError(
        absl::StrCat("table spec '", spec.title(), "': no metrics"));
  // Columns: the values of `columns` (one metric), else one per metric.
  std::vector<std::string> column_values;
  if (!spec.columns().empty()) {
    auto keys = Keys(table, spec.where(), {spec.columns()});
    if (!keys.ok()) return keys.status();
    for (const auto& key : *keys) column_values.push_back(key[0]);
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
  for (const auto& key : *row_keys) {
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
              ? Number(interval.estimate, digits)
              : absl::StrCat(Number(interval.estimate, digits), " ± ",
                             Number(interval.high - interval.estimate, 2)));
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
  auto groups = Keys(table, spec.where(), {spec.group()});
  if (!groups.ok()) return groups.status();
  std::string csv =
      absl::StrCat(spec.group(), ",", spec.x(), ",", spec.y(), "_mean,",
                   spec.y(), "_ci_low,", spec.y(), "_ci_high,n\n");
  for (const auto& group : *groups) {
    const auto where = With(spec.where(), {spec.group()}, group);
    auto levels = Levels(table, where, spec.x());
    if (!levels.ok()) return levels.status();
    for (const std::string& x : *levels) {
      auto by_seed =
          SeedMeans(table, where, SeedColumnOrDefault(spec.seed_column()), "",
                    "", spec.x(), x, spec.y(), spec.average_over());
      if (!by_seed.ok())
        return absl::Status(by_seed.status().code(),
                            absl::StrCat("figure ", spec.file(), ": ",
                                         by_seed.status().message()));
      const Interval interval = MeanInterval(SeedValues(*by_seed), kConfidence);
      const bool bounded = interval.n >= 2;
      absl::StrAppend(
          &csv, CsvField(group[0]), ",", x, ",", Number(interval.estimate, 8),
          ",", bounded ? Number(interval.low, 8) : "", ",",
          bounded ? Number(interval.high, 8) : "", ",", interval.n, "\n");
    }
  }
  return TidyTable::Parse(csv, spec.file());
}

// The --hline arguments of a figure's reference lines: a column's value is the
// mean over seeds of its one value per seed among the figure's rows.
absl::StatusOr<std::vector<std::string>> ReferenceLineArguments(
    const FigureSpec& spec, const TidyTable& table) {
  std::vector<std::string> arguments;
  for (const ReferenceLine& line : spec.reference_lines()) {
    auto error = [&](absl::string_view what) {
      return absl::InvalidArgumentError(absl::StrCat("figure ", spec.file(),
                                                     ": reference line '",
                                                     line.label(), "' ", what));
    };
    if (line.label().empty()) return error("has no label");
    double value = line.value();
    if (line.source_case() == ReferenceLine::kColumn) {
      ASSIGN_OR_RETURN(const int column, table.Column(line.column()));
      ASSIGN_OR_RETURN(const int seed_column,
                       table.Column(SeedColumnOrDefault(spec.seed_column())));
      std::map<std::string, double> by_seed;
      for (const auto& row : table.rows()) {
        if (!PassesFilters(table, row, spec.where())) continue;
        ASSIGN_OR_RETURN(const double cell,
                         ParseNumber(row[column], table.name()));
        const auto [it, added] = by_seed.emplace(row[seed_column], cell);
        if (!added && it->second != cell) {
          return error(absl::StrCat("reads column ", line.column(),
                                    ", which has several values for seed ",
                                    row[seed_column],
                                    " (a per-level metric, not a reference)"));
        }
      }
      if (by_seed.empty()) return error("has no rows");
      value = MeanInterval(SeedValues(by_seed), kConfidence).estimate;
    } else if (line.source_case() != ReferenceLine::kValue) {
      return error("needs a column or a value");
    }
    arguments.push_back(
        absl::StrCat("--hline=", Number(value, 8), ":", line.label()));
  }
  return arguments;
}

std::string RenderVerdict(const ClaimResult& result) {
  const Claim& claim = *result.claim;
  const bool percent = IsRelative(claim);
  std::string line = absl::StrCat(
      "- ", claim.id(),
      claim.source().empty() ? "" : absl::StrCat(" (", claim.source(), ")"),
      ": ", claim.statement(), " → ", Bold(result.verdict), ".");
  const bool per_level =
      result.levels.size() > 1 ||
      (!result.levels.empty() && !result.levels[0].level.empty());
  if (!per_level && !result.levels.empty()) {
    absl::StrAppend(
        &line, " ", EffectName(claim), " = ",
        IntervalText(result.levels[0], percent, claim.seed_column()), ".");
  } else if (per_level) {
    absl::StrAppend(&line, " ", EffectName(claim), " at each ", claim.over(),
                    " below");
    if (result.levels[0].family_size > 1) {
      absl::StrAppend(&line, ", simultaneous 95% intervals over its ",
                      result.levels[0].family_size,
                      " levels (Bonferroni: each at ",
                      Number(100.0 * result.levels[0].confidence, 4), "%)");
    }
    line += ".";
  } else {
    // Nothing measured (an arm not run, no rows): the effect it would be.
    absl::StrAppend(&line, " ", EffectName(claim), ": not measured.");
  }
  if (claim.comparison() == NOT_WORSE) {
    absl::StrAppend(&line, " Not worse by more than ",
                    percent ? absl::StrFormat("%.2f%%", 100 * claim.tolerance())
                            : Number(claim.tolerance()),
                    ".");
  }
  if (claim.comparison() == WITHIN) {
    absl::StrAppend(&line, " Tolerance ±",
                    percent ? absl::StrFormat("%.2f%%", 100 * claim.tolerance())
                            : Number(claim.tolerance()),
                    ".");
  }
  if (claim.has_paper_effect()) {
    absl::StrAppend(&line, " Paper: ", Signed(claim.paper_effect(), percent),
                    claim.magnitude_claimed() ? " (magnitude claimed)." : ".");
  }
  if (!claim.controls().empty()) {
    absl::StrAppend(&line, " Controls: ", absl::StrJoin(claim.controls(), ", "),
                    ".");
  } else if (!claim.no_control_reason().empty()) {
    absl::StrAppend(&line, " No control: ", claim.no_control_reason(), ".");
  }
  if (claim.basis() == BY_DESIGN)
    absl::StrAppend(&line, " By design: ", claim.design_reason(), ".");
  if (claim.has_smallest_effect() && claim.basis() == EMPIRICAL) {
    absl::StrAppend(
        &line, " Smallest effect of interest: ",
        percent ? absl::StrFormat("%.2f%%", 100 * claim.smallest_effect())
                : Number(claim.smallest_effect()),
        claim.seeds_needed() > 0
            ? absl::StrCat(" (seed plan: n = ", claim.seeds_needed(), ")")
            : "",
        ".");
  }
  if (!result.reason.empty())
    absl::StrAppend(&line, " Not testable: ", result.reason, ".");
  line += "\n";
  if (per_level) {
    for (const LevelResult& level : result.levels) {
      absl::StrAppend(&line, "  - ", claim.over(), " = ", level.level, ": ",
                      IntervalText(level, percent, claim.seed_column()), " → ",
                      Bold(level.verdict), "\n");
    }
  }
  return line;
}

absl::StatusOr<std::string> RenderSection(
    const ClaimSet& claims, const Tables& tables,
    const std::vector<ClaimResult>& results, const RenderOptions& options) {
  std::string out;
  for (const std::string& paragraph : claims.preamble())
    absl::StrAppend(&out, paragraph, "\n\n");
  if (!claims.seed_plan().empty())
    absl::StrAppend(&out, "Seed plan: ", claims.seed_plan(), "\n\n");
  if (claims.tables_size() > 0) {
    absl::StrAppend(&out,
                    "Table cells: mean ± half-width of the 95% t interval "
                    "over seeds; n: seeds (a bare mean when n = 1).\n\n");
  }
  for (const TableSpec& spec : claims.tables()) {
    auto table = RenderTable(spec, tables);
    if (!table.ok()) return table.status();
    absl::StrAppend(&out, *table, "\n");
  }
  if (claims.figures_size() > 0) {
    std::vector<std::string> written, heat_maps, empty;
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
      auto points = FigurePoints(points_spec, tables);
      if (!points.ok()) return points.status();
      // Its filters select nothing (a base not run), as a table's "-" cells.
      if (points->rows().empty()) {
        empty.push_back(spec.title());
        continue;
      }
      std::string stem = spec.file();
      if (stem.size() > 4 && stem.substr(stem.size() - 4) == ".svg")
        stem.resize(stem.size() - 4);
      const std::string points_path =
          absl::StrCat(options.out_dir, "/", stem, ".points.csv");
      RETURN_IF_ERROR(WriteFileAtomically(points_path, points->ToCsv()));
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
        argv = {options.plot_script,
                "--csv=" + points_path,
                "--x=" + spec.x(),
                "--y=" + spec.y() + "_mean",
                "--ylow=" + spec.y() + "_ci_low",
                "--yhigh=" + spec.y() + "_ci_high",
                "--group=" + spec.group(),
                "--out=" + file_path,
                "--title=" + spec.title(),
                "--xlabel=" + xlabel,
                "--ylabel=" + ylabel};
        if (spec.logx()) argv.push_back("--logx");
        if (spec.logy()) argv.push_back("--logy");
        if (spec.integer_x()) argv.push_back("--integer_x");
        ASSIGN_OR_RETURN(const std::vector<std::string> lines,
                         ReferenceLineArguments(spec, tables.at(spec.table())));
        argv.insert(argv.end(), lines.begin(), lines.end());
      }
      if (auto status = RunCommand(argv); !status.ok()) {
        return absl::Status(
            status.code(),
            absl::StrCat("figure ", spec.file(), ": ", status.message()));
      }
      (heat_map ? heat_maps : written)
          .push_back(absl::StrCat(spec.title(), " (", file_path, ")"));
    }
    if (!written.empty()) {
      absl::StrAppend(&out, "Figures (seed means with 95% CI error bars): ",
                      absl::StrJoin(written, "; "), ".\n\n");
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
  std::string controls, paper_claims, design;
  int judged = 0;
  for (const ClaimResult& result : results) {
    const bool by_design = result.claim->basis() == BY_DESIGN;
    absl::StrAppend(result.is_control ? &controls
                    : by_design       ? &design
                                      : &paper_claims,
                    RenderVerdict(result));
    if (!result.is_control && !by_design &&
        result.verdict != Verdict::kNotTestable)
      ++judged;
  }
  if (!controls.empty()) {
    absl::StrAppend(
        &out, "## Controls and sanity checks (not counted as paper claims)\n\n",
        controls, "\n");
  }
  if (!design.empty()) {
    absl::StrAppend(&out,
                    "## Checked by construction (fixed by the configuration or "
                    "a theorem: design statements, not evidence, never "
                    "counted)\n\n",
                    design, "\n");
  }
  if (!paper_claims.empty()) {
    absl::StrAppend(&out, "## The papers' claims on our data\n\n", paper_claims,
                    "\n", ChanceLine(judged), "\n\n");
  }
  absl::StrAppend(&out,
                  "Verdicts: HOLDS when the interval (95%, simultaneous over a "
                  "claim's levels) excludes zero in the "
                  "paper's direction (and reaches a "
                  "claimed magnitude), DOES NOT HOLD when it excludes zero the "
                  "other way (or the claimed "
                  "magnitude), UNRESOLVED when it contains zero, NOT TESTABLE "
                  "when a control does not hold, a "
                  "precondition fails, the seed plan's n is not reached or "
                  "every seed gives the same value (analysis/claims).\n");
  for (const std::string& note : claims.notes())
    absl::StrAppend(&out, "\n", note, "\n");
  if (claims.amendments_size() > 0) {
    absl::StrAppend(&out,
                    "\n## Amendments (changes of seeds, base models or claims "
                    "after the seed plan)\n\n");
    for (const Amendment& amendment : claims.amendments()) {
      absl::StrAppend(&out, "- ", amendment.date(), ": ", amendment.what(),
                      " Why: ", amendment.why(), "\n");
    }
  }
  return out;
}

namespace {

// verdicts.csv's kind: a control, a design statement or an empirical claim.
const char* KindName(const ClaimResult& result) {
  if (result.is_control) return "control";
  return result.claim->basis() == BY_DESIGN ? "design" : "claim";
}

}  // namespace

TidyTable VerdictsTable(const std::string& experiment,
                        const std::vector<ClaimResult>& results) {
  std::string csv =
      "experiment,kind,id,source,statement,level,verdict,effect,ci_low,ci_high,"
      "n,paper_effect,reason,confidence\n";
  auto row = [&](const ClaimResult& result, const LevelResult* level,
                 bool summary) {
    const Claim& claim = *result.claim;
    const std::string effect = level ? Number(level->effect.estimate, 8) : "";
    const bool bounded = level && !std::isinf(level->effect.low) &&
                         !std::isinf(level->effect.high);
    absl::StrAppend(
        &csv, CsvField(experiment), ",", KindName(result), ",",
        CsvField(claim.id()), ",", CsvField(claim.source()), ",",
        CsvField(claim.statement()), ",", summary ? "" : CsvField(level->level),
        ",", VerdictName(summary ? result.verdict : level->verdict), ",",
        effect, ",", bounded ? Number(level->effect.low, 8) : "", ",",
        bounded ? Number(level->effect.high, 8) : "", ",",
        level ? absl::StrCat(level->effect.n) : "", ",",
        claim.has_paper_effect() ? Number(claim.paper_effect(), 8) : "", ",",
        summary ? CsvField(result.reason) : "", ",",
        level ? Number(level->confidence, 8) : "", "\n");
  };
  for (const ClaimResult& result : results) {
    const bool per_level =
        result.levels.size() > 1 ||
        (!result.levels.empty() && !result.levels[0].level.empty());
    row(result,
        per_level || result.levels.empty() ? nullptr : &result.levels[0], true);
    if (per_level) {
      for (const LevelResult& level : result.levels) row(result, &level, false);
    }
  }
  return *TidyTable::Parse(csv, "verdicts.csv");
}

absl::StatusOr<std::string> SummarizeVerdicts(
    const std::vector<TidyTable>& verdicts) {
  std::vector<std::string> order;
  std::map<std::string, std::map<std::string, int>> counts;
  std::map<std::string, std::pair<int, int>> controls;
  std::map<std::string, int> design;
  for (const TidyTable& table : verdicts) {
    auto experiment = table.Column("experiment");
    auto kind = table.Column("kind");
    auto level = table.Column("level");
    auto verdict = table.Column("verdict");
    for (const auto& status : {experiment.status(), kind.status(),
                               level.status(), verdict.status()}) {
      if (!status.ok()) return status;
    }
    for (const auto& row : table.rows()) {
      const std::string& name = row[*experiment];
      if (std::find(order.begin(), order.end(), name) == order.end()) {
        order.push_back(name);
        counts[name];
        controls[name];
      }
      if (!row[*level].empty()) continue;
      const std::string& v = row[*verdict];
      if (!IsVerdictName(v)) {
        return absl::InvalidArgumentError(absl::StrCat(
            table.name(), ": verdict '", v, "' is not in the vocabulary"));
      }
      if (row[*kind] == "claim") {
        ++counts[name][v];
      } else if (row[*kind] == "design") {
        ++design[name];
      } else if (row[*kind] == "control") {
        ++controls[name].second;
        if (v == "HOLDS") ++controls[name].first;
      } else {
        return absl::InvalidArgumentError(
            absl::StrCat(table.name(), ": kind '", row[*kind], "'"));
      }
    }
  }
  std::string out =
      "| experiment | holds | does not hold | unresolved | not testable | "
      "controls that hold | empirical claims judged | resolved by chance "
      "alone (expected, at most) | checked by construction |\n"
      "|---|---|---|---|---|---|---|---|---|\n";
  int all_judged = 0;
  for (const std::string& name : order) {
    auto& c = counts[name];
    const int judged = c["HOLDS"] + c["DOES NOT HOLD"] + c["UNRESOLVED"];
    all_judged += judged;
    absl::StrAppend(&out, "| [", name, "](#", name, ") | ", c["HOLDS"], " | ",
                    c["DOES NOT HOLD"], " | ", c["UNRESOLVED"], " | ",
                    c["NOT TESTABLE"], " | ", controls[name].first, " / ",
                    controls[name].second, " | ", judged, " | ",
                    absl::StrFormat("%.2g", 0.05 * judged), " | ", design[name],
                    " |\n");
  }
  absl::StrAppend(
      &out,
      "\nEach empirical claim is judged at a 95% family-wise level over its "
      "levels (Bonferroni): its verdict (HOLDS or DOES NOT HOLD) is wrong with "
      "probability at most 5%, so of the ",
      all_judged, " judged here at most about ",
      absl::StrFormat("%.2g", 0.05 * all_judged),
      " verdicts are expected wrong by chance alone; claims are not corrected "
      "across each other. Design statements (checked by construction) and "
      "controls are never counted.\n");
  return out;
}

absl::StatusOr<int> VerifyVerdicts(const ClaimSet& claims,
                                   const TidyTable& verdicts, int min_n) {
  std::map<std::string, std::string> kind_of;
  for (const Claim& control : claims.controls())
    kind_of[control.id()] = "control";
  for (const Claim& claim : claims.claims())
    kind_of[claim.id()] = claim.basis() == BY_DESIGN ? "design" : "claim";
  int columns[8];
  const char* names[8] = {"experiment", "kind", "id",     "level",
                          "verdict",    "n",    "ci_low", "ci_high"};
  for (int i = 0; i < 8; ++i) {
    auto index = verdicts.Column(names[i]);
    if (!index.ok()) return index.status();
    columns[i] = *index;
  }
  std::map<std::string, int> summary_rows;
  for (const auto& row : verdicts.rows()) {
    const std::string& id = row[columns[2]];
    auto it = kind_of.find(id);
    if (row[columns[0]] != claims.experiment()) {
      return absl::InvalidArgumentError(
          absl::StrCat(verdicts.name(), ": experiment '", row[columns[0]],
                       "', not '", claims.experiment(), "'"));
    }
    if (it == kind_of.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          verdicts.name(), ": '", id, "' is not in the claims file"));
    }
    if (row[columns[1]] != it->second) {
      return absl::InvalidArgumentError(
          absl::StrCat(verdicts.name(), ": ", id, " is a ", it->second,
                       ", not a ", row[columns[1]]));
    }
    const std::string& v = row[columns[4]];
    if (!IsVerdictName(v)) {
      return absl::InvalidArgumentError(
          absl::StrCat(verdicts.name(), ": ", id, ": verdict '", v,
                       "' is not in the vocabulary"));
    }
    if (row[columns[3]].empty()) ++summary_rows[id];
    // A counted verdict rests on a noise estimate: never a zero-width interval.
    if (it->second == "claim" && row[columns[3]].empty() &&
        (v == "HOLDS" || v == "DOES NOT HOLD") && !row[columns[6]].empty() &&
        row[columns[6]] == row[columns[7]]) {
      return absl::InvalidArgumentError(
          absl::StrCat(verdicts.name(), ": claim ", id, " is ", v,
                       " on a zero-width interval"));
    }
    if (min_n > 0 && !row[columns[5]].empty()) {
      auto n =
          ParseNumber(row[columns[5]], absl::StrCat(verdicts.name(), " ", id));
      if (!n.ok()) return n.status();
      if (*n < min_n) {
        return absl::InvalidArgumentError(absl::StrCat(verdicts.name(), ": ",
                                                       id, " rests on n = ", *n,
                                                       ", fewer than ", min_n));
      }
    }
  }
  for (const auto& [id, kind] : kind_of) {
    if (summary_rows[id] != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat(verdicts.name(), ": ", kind, " ", id, " has ",
                       summary_rows[id], " summary rows, not 1"));
    }
  }
  return static_cast<int>(kind_of.size());
}

}  // namespace sparse_layers::claims
