#include "analysis/replacement/frontier_gap.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/common/status_macros.h"

namespace sparse_layers::analysis {
namespace {

// One TopK fit on the frontier: log L0 and the two metrics.
struct FrontierPoint {
  double log_l0, ce, nmse;
};

// The layer whose TopK fits are `method`'s frontier: the SAE registry names
// fix their rule (batch_topk_sae, relu_sae, jump_relu_sae), so theirs is
// topk_sae's; any other layer takes its rule from the config, its own.
std::string FrontierMethod(const std::string& method) {
  for (const char* sae : {"batch_topk_sae", "relu_sae", "jump_relu_sae"}) {
    if (method == sae) return "topk_sae";
  }
  return method;
}

}  // namespace

absl::StatusOr<std::string> FrontierGap(const claims::TidyTable& frontier,
                                        std::vector<std::string>* outside) {
  std::map<std::string, int> at;
  for (const char* column :
       {"base", "name", "method", "k", "sparsity", "sparsity_penalty", "seed",
        "training", "l0", "ce", "nmse"}) {
    ASSIGN_OR_RETURN(at[column], frontier.Column(column));
  }
  using Key = std::tuple<std::string, std::string, std::string>;
  const auto key_of = [&](const std::vector<std::string>& row) {
    return Key{row[at["base"]], FrontierMethod(row[at["method"]]),
               row[at["seed"]]};
  };
  const auto where = [&](const std::vector<std::string>& row,
                         const char* column) {
    return absl::StrCat(frontier.name(), ": ", row[at["name"]], " ", column);
  };
  // A fit's L0 and metrics, read the same way on both sides.
  struct Fit {
    double l0, ce, nmse;
  };
  const auto fit_of =
      [&](const std::vector<std::string>& row) -> absl::StatusOr<Fit> {
    Fit fit;
    ASSIGN_OR_RETURN(fit.l0,
                     claims::ParseNumber(row[at["l0"]], where(row, "l0")));
    ASSIGN_OR_RETURN(fit.ce,
                     claims::ParseNumber(row[at["ce"]], where(row, "ce")));
    ASSIGN_OR_RETURN(fit.nmse,
                     claims::ParseNumber(row[at["nmse"]], where(row, "nmse")));
    return fit;
  };
  std::map<Key, std::vector<FrontierPoint>> topk;
  for (const auto& row : frontier.rows()) {
    if (row[at["sparsity"]] != "topk" || row[at["training"]] != "default") {
      continue;
    }
    ASSIGN_OR_RETURN(const Fit fit, fit_of(row));
    const auto [l0, ce, nmse] = fit;
    if (!(l0 > 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat(where(row, "l0"), " is ", l0, "; a TopK fit fires"));
    }
    topk[key_of(row)].push_back({std::log(l0), ce, nmse});
  }
  for (auto& [key, points] : topk) {
    std::sort(points.begin(), points.end(),
              [](const FrontierPoint& a, const FrontierPoint& b) {
                return a.log_l0 < b.log_l0;
              });
  }
  // A level (base, method, rule, K, penalty) with any fit outside its TopK
  // range is left out whole, so no level is judged on seeds picked by the
  // outcome (K: BatchTopK's target, whose measured L0 only nears it).
  using Level = std::tuple<std::string, std::string, std::string, std::string,
                           std::string>;
  const auto level_of = [&](const std::vector<std::string>& row) {
    return Level{row[at["base"]], row[at["method"]], row[at["sparsity"]],
                 row[at["k"]], row[at["sparsity_penalty"]]};
  };
  std::set<Level> left_out;
  std::string csv =
      "base,name,method,k,sparsity,sparsity_penalty,seed,l0,compared,ce,"
      "topk_ce_at_l0,nmse,topk_nmse_at_l0\n";
  // Each row's level, its leading cells and its interpolated cells ("," and
  // empty for a fit outside the frontier).
  struct Line {
    Level level;
    std::string head, tail;
  };
  std::vector<Line> lines;
  for (const auto& row : frontier.rows()) {
    if (row[at["sparsity"]] == "topk" || row[at["training"]] != "default") {
      continue;
    }
    const auto found = topk.find(key_of(row));
    if (found == topk.end() || found->second.size() < 2) {
      return absl::InvalidArgumentError(absl::StrCat(
          where(row, "sparsity"), " is ", row[at["sparsity"]],
          ", but the table has fewer than two TopK ",
          FrontierMethod(row[at["method"]]), " fits of base ", row[at["base"]],
          " and seed ", row[at["seed"]], " to place it against"));
    }
    const std::vector<FrontierPoint>& points = found->second;
    ASSIGN_OR_RETURN(const Fit fit, fit_of(row));
    const auto [l0, ce, nmse] = fit;
    Line line{level_of(row),
              absl::StrFormat("%s,%s,%s,%s,%s,%s,%s,%.6g", row[at["base"]],
                              row[at["name"]], row[at["method"]], row[at["k"]],
                              row[at["sparsity"]], row[at["sparsity_penalty"]],
                              row[at["seed"]], l0),
              absl::StrFormat("%.6f,,%.6f,", ce, nmse)};
    const double x = std::log(l0);
    if (!(l0 > 0) || x < points.front().log_l0 || x > points.back().log_l0) {
      if (outside != nullptr) outside->push_back(row[at["name"]]);
      left_out.insert(line.level);
      lines.push_back(std::move(line));
      continue;
    }
    // The first segment whose right end reaches x (ties: the left point).
    size_t right = 1;
    while (points[right].log_l0 < x) ++right;
    const FrontierPoint& a = points[right - 1];
    const FrontierPoint& b = points[right];
    const double t =
        b.log_l0 > a.log_l0 ? (x - a.log_l0) / (b.log_l0 - a.log_l0) : 0.0;
    line.tail =
        absl::StrFormat("%.6f,%.6f,%.6f,%.6f", ce, a.ce + t * (b.ce - a.ce),
                        nmse, a.nmse + t * (b.nmse - a.nmse));
    lines.push_back(std::move(line));
  }
  // compared: 1 where every seed's fit of the level lies inside its frontier.
  for (const Line& line : lines) {
    absl::StrAppend(&csv, line.head, ",", left_out.count(line.level) ? 0 : 1,
                    ",", line.tail, "\n");
  }
  return csv;
}

}  // namespace sparse_layers::analysis
