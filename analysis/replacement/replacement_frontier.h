// The MxD sparsity-accuracy frontier of fitted replacement layers (MxD
// arXiv:2505.21364 Sec. 3.1, Figs. 3 and 10, Sec. B.4.2 Table 3, Sec. C.1):
// for the base model, next-token CE and CE with the replaced block's FFN
// zero-ablated; for each replacement checkpoint (the base with the layer
// spliced in), CE, CE recovered, normalised MSE, l0 and dead fraction on
// held-out activation rows, and for MxDs the mean normalised rank of sampled
// experts W_n = D diag(c_n). One CSV row per replacement, with the fit's seed
// (its config's runtime.seed) so the claims engine can pair arms, and
// ablation_cost = zero-ablated CE - base CE: what the replaced FFN is worth.
#ifndef SPARSE_LAYERS_ANALYSIS_REPLACEMENT_REPLACEMENT_FRONTIER_H_
#define SPARSE_LAYERS_ANALYSIS_REPLACEMENT_REPLACEMENT_FRONTIER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "datasets/activations/activation_shards.h"
#include "datasets/text/token_shards.h"
#include "layers/models/model_loader.h"
#include "layers/replacement/sparse_replacement.h"

namespace sparse_layers::analysis {

// Mean of rank(D diag(c_n)) / min(H, O) over `samples` evenly spaced experts
// n = i N / samples (MxD Eq. 23, Table 3).
double MeanExpertRank(const layers::MxdImpl& mxd, int samples);

struct ReplacementFrontierOptions {
  std::string base_name = "base";  // The CSV's `base` column.
  int batches = 16;                // CE evaluation batches...
  int batch_size = 16;             // ...of this many windows.
  int64_t rows = 32768;            // Activation rows for NMSE, l0, dead units.
  int rank_experts = 64;           // MxD experts sampled for the rank.
};

// The frontier CSV. `base` (loaded from `base_path`) has its cached block's
// FFN zero-ablated afterwards; `activations` must be that model's cache.
absl::StatusOr<std::string> EvaluateReplacements(
    layers::LoadedModel& base, const std::string& base_path,
    const datasets::TokenShardSet& tokens,
    const datasets::ActivationSet& activations,
    const std::vector<std::string>& replacement_paths,
    const ReplacementFrontierOptions& options);

}  // namespace sparse_layers::analysis

#endif  // SPARSE_LAYERS_ANALYSIS_REPLACEMENT_REPLACEMENT_FRONTIER_H_
