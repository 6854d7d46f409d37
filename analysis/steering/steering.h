// Feature steering with fitted replacement layers (MxD arXiv:2505.21364 Sec.
// 3.2.2, Fig. 5, Sec. D.1). For each layer (the base model's own FFN neurons,
// the dense baseline, then each fit), alpha is added to one unit's code at
// every position (base neurons and Transcoder / Skip Transcoder: alpha d_n;
// MxD: alpha (c_n o D^T z); SAE on the FFN output: alpha times its decoder
// row), and `samples` continuations of the prompt are sampled (top-p,
// temperature, frequency penalty as in the paper's code). Units are the
// layer's first `units` live units (positive on reference text). alpha =
// alpha_scale x the unit's largest reference activation, alpha_scale chosen
// per layer on held-out windows: of `alpha_grid`, the scale that most raises
// the probability of the units' concept tokens while costing at most
// `max_ce_increase` nats of next-token CE, averaged over `calibration_units`
// other live units (the paper's fixed alpha is for LLM-scale codes). Scores,
// without LLM judges:
//   concept: share of generated tokens among the unit's 10 top-activating
//            tokens, steered minus unsteered (same sampling seeds);
//   fluency: mean NLL of the generated tokens under the base model.
// Samples are drawn from `seed`, written to the CSV's `seed` column: one
// seed's run steers that seed's fits, so the claims engine pairs them.
#ifndef SPARSE_LAYERS_ANALYSIS_STEERING_STEERING_H_
#define SPARSE_LAYERS_ANALYSIS_STEERING_STEERING_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "datasets/text/token_shards.h"
#include "datasets/text/tokenizer.h"
#include "models/model_loader.h"

namespace sparse_layers::analysis {

// Comma-separated alpha scales, each positive and at most 1e6.
absl::StatusOr<std::vector<double>> ParseAlphaGrid(absl::string_view text);

struct SteeringOptions {
  std::string base_name = "base";  // The CSV's base column.
  std::string prompt = "Let's talk about ";
  int reference_batches = 8;  // Reference windows / 8 for top tokens.
  int sweep_batches = 2;      // Held-out windows / 8 for the alpha sweep.
  int units = 16;             // Steer each layer's first live units.
  int samples = 4;            // Samples per unit.
  int new_tokens = 32;        // Tokens per sample.
  std::vector<double> alpha_grid = {0.5, 1, 2, 4, 8, 16, 32};
  double max_ce_increase = 1.0;  // Held-out CE cost the chosen scale may add.
  int calibration_units = 8;     // Live units the alpha sweep averages over.
  double temperature = 1.0;
  double top_p = 0.1;              // Nucleus mass (paper: 0.1).
  double frequency_penalty = 1.0;  // Paper: 1.0.
  uint64_t seed = 42;              // Sample s of a unit draws from seed + s.
  // Also steer the base model's own FFN neurons (the dense baseline, MxD
  // arXiv:2505.21364 Fig. 5); off where another run of the same base already
  // has them (the atlas's steering beside //experiments/steering's).
  bool dense_baseline = true;
};

// The steering CSV (one row per layer and steered unit, with its header) and
// the example generations with each layer's alpha sweep (text).
struct SteeringTables {
  std::string csv, examples;
};

// Steers the base model's FFN neurons at the first fit's block (with
// dense_baseline), then every fit in order (layers::LoadReplacements), on
// reference and held-out windows of `tokens`. `base_path` and each fit's path
// name them in errors.
absl::StatusOr<SteeringTables> Steer(
    const std::string& base_path, const layers::LoadedModel& base,
    const datasets::Tokenizer& tokenizer, const datasets::TokenShardSet& tokens,
    const std::vector<layers::LoadedReplacement>& fits,
    const SteeringOptions& options);

}  // namespace sparse_layers::analysis

#endif  // SPARSE_LAYERS_ANALYSIS_STEERING_STEERING_H_
