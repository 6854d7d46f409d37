#include "analysis/replacement/probing_vs_fidelity.h"

#include <map>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/common/status_macros.h"

namespace sparse_layers::analysis {

absl::StatusOr<std::string> ProbingVsFidelity(
    const claims::TidyTable& probing, const claims::TidyTable& frontier) {
  std::map<std::string, int> p, f;
  for (const char* column : {"base", "method", "layer_kind", "seed",
                             "granularity", "best_f1", "selected_f1"}) {
    ASSIGN_OR_RETURN(p[column], probing.Column(column));
  }
  for (const char* column : {"name", "ce_recovered", "nmse", "l0"}) {
    ASSIGN_OR_RETURN(f[column], frontier.Column(column));
  }
  // The fit's frontier row, by name.
  std::map<std::string, const std::vector<std::string>*> fits;
  for (const auto& row : frontier.rows()) {
    if (!fits.emplace(row[f["name"]], &row).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(frontier.name(), ": two rows for fit ", row[f["name"]]));
    }
  }
  // (base, fit, layer kind, seed, granularity) -> F1 sums and class count.
  using Key = std::tuple<std::string, std::string, std::string, std::string,
                         std::string>;
  struct Sums {
    double best = 0, selected = 0;
    int classes = 0;
  };
  std::map<Key, Sums> sums;
  for (const auto& row : probing.rows()) {
    const std::string& kind = row[p["layer_kind"]];
    if (kind == "mlp_neurons" || kind == "random") continue;
    if (!fits.count(row[p["method"]])) {
      return absl::InvalidArgumentError(
          absl::StrCat(probing.name(), ": probed fit ", row[p["method"]],
                       " has no row in ", frontier.name()));
    }
    const std::string where =
        absl::StrCat(probing.name(), ": ", row[p["method"]], " ");
    ASSIGN_OR_RETURN(const double best,
                     claims::ParseNumber(row[p["best_f1"]], where + "best_f1"));
    ASSIGN_OR_RETURN(
        const double selected,
        claims::ParseNumber(row[p["selected_f1"]], where + "selected_f1"));
    Sums& s = sums[Key{row[p["base"]], row[p["method"]], kind, row[p["seed"]],
                       row[p["granularity"]]}];
    s.best += best;
    s.selected += selected;
    ++s.classes;
  }
  std::string csv =
      "base,name,layer_kind,seed,granularity,classes,best_f1,selected_f1,"
      "ce_recovered,nmse,l0\n";
  for (const auto& [key, s] : sums) {
    const auto& [base, name, kind, seed, granularity] = key;
    const std::vector<std::string>& fit = *fits.at(name);
    absl::StrAppendFormat(&csv, "%s,%s,%s,%s,%s,%d,%.6f,%.6f,%s,%s,%s\n", base,
                          name, kind, seed, granularity, s.classes,
                          s.best / s.classes, s.selected / s.classes,
                          fit[f["ce_recovered"]], fit[f["nmse"]], fit[f["l0"]]);
  }
  return csv;
}

}  // namespace sparse_layers::analysis
