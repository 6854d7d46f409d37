// How far a layer fitted under another sparsity rule sits from the TopK
// frontier of the same layer, base and seed, at its own L0 (MxD,
// arXiv:2505.21364 App. B.6.1, Fig. 18: TopK against ReLU + L1).
#ifndef SPARSE_LAYERS_ANALYSIS_REPLACEMENT_FRONTIER_GAP_H_
#define SPARSE_LAYERS_ANALYSIS_REPLACEMENT_FRONTIER_GAP_H_

#include <string>

#include "absl/status/statusor.h"
#include "analysis/claims/tidy_table.h"

namespace sparse_layers::analysis {

// The gap table: for every row of `frontier` (evaluate_replacements' columns)
// whose sparsity is not "topk", the TopK rows of the same base, seed and
// layer (default training; the SAE names batch_topk_sae, relu_sae and
// jump_relu_sae fix their rule, so theirs is topk_sae) interpolated at its
// L0, linearly in log L0 between the two whose L0 bracket it, for CE and NMSE:
//   base,name,method,k,sparsity,sparsity_penalty,seed,l0,compared,ce,
//   topk_ce_at_l0,nmse,topk_nmse_at_l0
// A fit whose L0 lies outside its TopK fits' range has empty topk_* cells;
// `outside` (if given) receives their names, and every row of their level
// (base, method, rule, K, penalty) has compared = 0 at every seed, so no level
// is judged on the seeds whose outcome let them in (claims filter on
// compared = 1; every fit keeps its row, so a check can see each level).
// Random-K rows are neither frontier nor compared. Errors when a fit has
// fewer than two TopK fits to compare with.
absl::StatusOr<std::string> FrontierGap(const claims::TidyTable& frontier,
                                        std::vector<std::string>* outside);

}  // namespace sparse_layers::analysis

#endif  // SPARSE_LAYERS_ANALYSIS_REPLACEMENT_FRONTIER_GAP_H_
