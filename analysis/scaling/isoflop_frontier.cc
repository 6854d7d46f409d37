#include "analysis/scaling/isoflop_frontier.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/common/status_macros.h"

namespace sparse_layers::analysis {
namespace {

using claims::CsvField;
using claims::ParseNumber;
using claims::TidyTable;

// One input row with the numbers the tables need.
struct Run {
  const std::vector<std::string>* row;
  std::string arm, seed, ffn, budget_text;
  double budget = 0, parameters = 0, forward_flops = 0, loss = 0,
         perplexity = 0;
};

std::string Row(const std::vector<std::string>& fields) {
  std::vector<std::string> quoted;
  for (const std::string& field : fields) quoted.push_back(CsvField(field));
  return absl::StrCat(absl::StrJoin(quoted, ","), "\n");
}

}  // namespace

absl::StatusOr<IsoflopCsv> IsoflopFrontier(const TidyTable& runs,
                                           double unigram_validation_loss) {
  if (!std::isfinite(unigram_validation_loss) || unigram_validation_loss <= 0)
    return absl::InvalidArgumentError(
        absl::StrCat("unigram validation loss ", unigram_validation_loss,
                     " is not a positive number"));
  std::map<std::string, int> at;
  for (const char* name :
       {"arm", "seed", "ffn", "budget", "parameters", "forward_flops_per_token",
        "validation_loss", "validation_perplexity"}) {
    ASSIGN_OR_RETURN(auto index, runs.Column(name));
    at[name] = index;
  }
  std::vector<Run> parsed;
  for (size_t r = 0; r < runs.rows().size(); ++r) {
    const std::vector<std::string>& row = runs.rows()[r];
    Run run{&row, row[at["arm"]], row[at["seed"]], row[at["ffn"]],
            row[at["budget"]]};
    const std::string where = absl::StrCat(runs.name(), " row ", r + 2);
    const std::pair<const char*, double*> numbers[] = {
        {"budget", &run.budget},
        {"parameters", &run.parameters},
        {"forward_flops_per_token", &run.forward_flops},
        {"validation_loss", &run.loss},
        {"validation_perplexity", &run.perplexity}};
    for (const auto& [column, value] : numbers) {
      ASSIGN_OR_RETURN(*value,
                       ParseNumber(row[at[column]],
                                   absl::StrCat(where, " column ", column)));
    }
    if (run.forward_flops <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": forward_flops_per_token must be positive"));
    }
    parsed.push_back(run);
  }
  std::stable_sort(parsed.begin(), parsed.end(),
                   [](const Run& a, const Run& b) {
                     return std::tie(a.budget, a.ffn, a.parameters, a.seed) <
                            std::tie(b.budget, b.ffn, b.parameters, b.seed);
                   });

  IsoflopCsv out;
  std::vector<std::string> header = runs.header();
  header.push_back("compute_sparsity");
  out.runs = Row(header);
  // Per (budget, ffn, seed): the best run so far, its rank among the sizes
  // (runs come in order of parameters) and the sizes seen.
  struct Best {
    size_t run = 0;
    int rank = 0;
    int sizes = 0;
  };
  std::map<std::tuple<double, std::string, std::string>, Best> best;
  for (size_t i = 0; i < parsed.size(); ++i) {
    const Run& run = parsed[i];
    std::vector<std::string> fields = *run.row;
    // Training FLOPs are 3 x forward (Kaplan et al.), as the budget counts.
    fields.push_back(
        absl::StrFormat("%.6g", run.parameters / (3.0 * run.forward_flops)));
    absl::StrAppend(&out.runs, Row(fields));
    auto [it, inserted] = best.try_emplace(
        std::tuple(run.budget, run.ffn, run.seed), Best{i, 0, 0});
    Best& group = it->second;
    if (run.loss < parsed[group.run].loss) {
      group.run = i;
      group.rank = group.sizes;
    }
    ++group.sizes;
  }
  out.frontier = Row({"ffn", "budget", "seed", "sizes", "best_size_rank",
                      "best_arm", "best_parameters", "best_validation_loss",
                      "best_validation_perplexity", "unigram_validation_loss"});
  for (const auto& [key, group] : best) {
    const Run& run = parsed[group.run];
    absl::StrAppend(
        &out.frontier,
        Row({run.ffn, run.budget_text, run.seed, absl::StrCat(group.sizes),
             absl::StrCat(group.rank), run.arm, (*run.row)[at["parameters"]],
             (*run.row)[at["validation_loss"]],
             (*run.row)[at["validation_perplexity"]],
             absl::StrFormat("%.6g", unigram_validation_loss)}));
  }
  return out;
}

}  // namespace sparse_layers::analysis
