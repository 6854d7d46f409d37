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

#include <torch/torch.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "datasets/text/token_shards.h"
#include "layers/replacement/sparse_replacement.h"
#include "models/model_loader.h"
#include "pipelines/activations/activation_shards.h"

namespace sparse_layers::analysis {

// Mean of rank(W_n) / min(H, O) over `samples` evenly spaced experts
// n = i N / samples (MxD Eq. 23, Table 3), W_n = D diag(c_n) for an MxD and
// U2 diag(U1[n]) U3 for a CP-MoE (App. B.4.1); nullopt for layers without
// expert matrices.
std::optional<double> MeanExpertRank(const layers::SparseReplacementImpl& layer,
                                     int samples);

struct ReplacementFrontierOptions {
  std::string base_name = "base";  // The CSV's `base` column.
  int batches = 16;                // CE evaluation batches...
  int batch_size = 16;             // ...of this many windows.
  int64_t rows = 32768;            // Activation rows for NMSE, l0, dead units.
  int rank_experts = 64;           // MxD experts sampled for the rank.
};

// How `layer` uses its units on the first `rows` activation rows.
struct UnitUsage {
  // Each unit's firing frequency: the share of rows on which its kept code is
  // > 0 (as MxD App. C.1 counts it).
  torch::Tensor frequencies;
  // The share of rows whose largest code is the most common such unit: a
  // shared expert (MxD App. C.2, Fig. 21), near 1 / units without one. Rows
  // where no code fires count for no unit.
  double shared_expert_rate = 0;
};
UnitUsage UsageOfUnits(layers::SparseReplacementImpl& layer,
                       const datasets::ActivationSet& data, bool on_output,
                       int64_t rows);

// The share of units firing on more than `threshold` of the rows (dense
// latents: SAEBench's "dense" count, arXiv:2503.09532, at 10%).
double DenseFraction(const torch::Tensor& frequencies, double threshold);

// MxD Fig. 20's histogram of log10(frequency + 1e-10): the share of units in
// each of 20 bins of width 0.5 over [-10, 0], as (bin centre, share) pairs;
// a unit that never fired lands in the first bin, centre -9.75.
std::vector<std::pair<double, double>> FrequencyHistogram(
    const torch::Tensor& frequencies);

struct ReplacementFrontierTables {
  std::string frontier;  // One row per replacement.
  // base,name,method,k,seed,log10_frequency,share_of_units: each fit's
  // FrequencyHistogram.
  std::string unit_frequencies;
};

// The frontier tables. `base` (loaded from `base_path`) has its cached block's
// FFN zero-ablated afterwards; `activations` must be that model's cache.
absl::StatusOr<ReplacementFrontierTables> EvaluateReplacements(
    layers::LoadedModel& base, const std::string& base_path,
    const datasets::TokenShardSet& tokens,
    const datasets::ActivationSet& activations,
    const std::vector<std::string>& replacement_paths,
    const ReplacementFrontierOptions& options);

}  // namespace sparse_layers::analysis

#endif  // SPARSE_LAYERS_ANALYSIS_REPLACEMENT_REPLACEMENT_FRONTIER_H_
