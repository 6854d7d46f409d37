// Sparse probing beside fidelity, one row per probed fit: the sparse-layer
// atlas's figure of probing F1 against CE recovered (issue 48; SAEBench,
// arXiv:2503.09532, plots its metrics against each other the same way).
#ifndef SPARSE_LAYERS_ANALYSIS_REPLACEMENT_PROBING_VS_FIDELITY_H_
#define SPARSE_LAYERS_ANALYSIS_REPLACEMENT_PROBING_VS_FIDELITY_H_

#include <string>

#include "absl/status/statusor.h"
#include "analysis/claims/tidy_table.h"

namespace sparse_layers::analysis {

// For every fit of `probing` (sparse_probe's rows; `method` names the fit)
// and granularity, the mean of its best_f1 and selected_f1 over all its task
// and class rows, beside the fit's row of `frontier` (evaluate_replacements'
// rows, `name` the fit): CE recovered, NMSE and L0:
//   base,name,layer_kind,seed,granularity,classes,best_f1,selected_f1,
//   ce_recovered,nmse,l0
// Rows of the base FFN's neurons and the random projection (layer_kind
// mlp_neurons, random) have no fit and are left out. Errors: a probed fit
// with no frontier row, or with two (a wiring mistake, not an outcome).
absl::StatusOr<std::string> ProbingVsFidelity(
    const claims::TidyTable& probing, const claims::TidyTable& frontier);

}  // namespace sparse_layers::analysis

#endif  // SPARSE_LAYERS_ANALYSIS_REPLACEMENT_PROBING_VS_FIDELITY_H_
