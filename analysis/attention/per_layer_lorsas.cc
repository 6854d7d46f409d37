#include "analysis/attention/per_layer_lorsas.h"

#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"

namespace sparse_layers::analysis {

absl::StatusOr<PerLayerLorsas> LorsasAtPerLayerK(std::vector<LorsaFit>& fits,
                                                 size_t blocks) {
  std::map<int, std::set<int>> blocks_of_k;
  for (const LorsaFit& fit : fits) {
    if (fit.method == "lorsa") {
      blocks_of_k[fit.spec.top_k()].insert(fit.spec.layer());
    }
  }
  PerLayerLorsas result;
  result.top_k = MostFrequentKey(blocks_of_k);
  if (result.top_k < 0) return absl::InvalidArgumentError("no Lorsa fit given");
  result.by_block.assign(blocks, layers::Lorsa(nullptr));
  result.seed = -1;
  for (LorsaFit& fit : fits) {
    if (fit.method != "lorsa" || fit.spec.top_k() != result.top_k) continue;
    const int block = fit.spec.layer();
    if (block < 0 || block >= static_cast<int>(blocks)) {
      return absl::InvalidArgumentError(
          absl::StrCat(fit.name, " replaces block ", block, " of a ", blocks,
                       "-block model"));
    }
    layers::Lorsa& lorsa = result.by_block[block];
    if (lorsa) {
      return absl::InvalidArgumentError(absl::StrCat(
          "two Lorsa fits of block ", block, " at K = ", result.top_k, " (",
          fit.name, "): give one per block"));
    }
    lorsa = fit.loaded.model->LorsaReplacement();
    if (!lorsa) {
      return absl::InvalidArgumentError(fit.name + " holds no Lorsa layer");
    }
    lorsa->eval();
    const int64_t fit_seed = fit.loaded.config.runtime().seed();
    if (result.seed >= 0 && fit_seed != result.seed) {
      return absl::InvalidArgumentError(
          absl::StrCat(fit.name, " has seed ", fit_seed, ", the others ",
                       result.seed, ": one seed per run"));
    }
    result.seed = fit_seed;
    ++result.count;
  }
  return result;
}

int64_t FitWindowLength(int64_t context, int64_t sequence_length) {
  return sequence_length > 0 ? std::min(sequence_length, context) : context;
}

}  // namespace sparse_layers::analysis
