// The derived tables of the sgatlin isoflop study (arXiv:2606.07414 Sec. 3.1,
// Figs. 1 and 3), computed from the runs' tidy CSV
// (//pipelines/train:summary_table) so that the claims engine judges plain
// columns:
//   runs      every input row plus compute_sparsity (parameters per training
//             FLOP per token, Fig. 1's ratio), sorted by budget, ffn,
//             parameters and seed;
//   frontier  per (ffn, budget, seed) the run of lowest validation loss over
//             the swept sizes (Fig. 1's compute-optimal model): its arm,
//             parameters, loss and perplexity, its rank among the sizes by
//             parameters (0: the smallest), how many sizes were swept, and
//             the unigram control's validation loss (unigram_baseline.h), the
//             loss every trained model must beat.
// The input needs the columns arm, seed, ffn, budget, parameters,
// forward_flops_per_token, validation_loss and validation_perplexity.
#ifndef SPARSE_LAYERS_ANALYSIS_SCALING_ISOFLOP_FRONTIER_H_
#define SPARSE_LAYERS_ANALYSIS_SCALING_ISOFLOP_FRONTIER_H_

#include <string>

#include "absl/status/statusor.h"
#include "analysis/claims/tidy_table.h"

namespace sparse_layers::analysis {

struct IsoflopCsv {
  std::string runs;
  std::string frontier;
};

absl::StatusOr<IsoflopCsv> IsoflopFrontier(const claims::TidyTable& runs,
                                           double unigram_validation_loss);

}  // namespace sparse_layers::analysis

#endif  // SPARSE_LAYERS_ANALYSIS_SCALING_ISOFLOP_FRONTIER_H_
