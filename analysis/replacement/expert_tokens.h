// What the first units of fitted replacement layers fire on (MxD
// arXiv:2505.21364 App. C.3, Figs. 23-24: top-activating tokens of the first
// experts): held-out windows run through the base model, each fit's codes read
// from its block's FFN input (or output, for an SAE), and per unit its firing
// rate, its most common token's share of its firings and its top contexts.
#ifndef SPARSE_LAYERS_ANALYSIS_REPLACEMENT_EXPERT_TOKENS_H_
#define SPARSE_LAYERS_ANALYSIS_REPLACEMENT_EXPERT_TOKENS_H_

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "datasets/text/token_shards.h"
#include "datasets/text/tokenizer.h"
#include "models/model_loader.h"

namespace sparse_layers::analysis {

// One unit's coefficient on every token: codes (values, indices) of shape
// (N, K) -> (N), the value where the unit is among the K, else 0.
torch::Tensor UnitCoefficients(const torch::Tensor& values,
                               const torch::Tensor& indices, int64_t unit);

// The share of the unit's firings (coefficient > 0) on its most common token,
// and that token; {0, -1} when it never fires.
struct TokenSpecificity {
  double share = 0;
  int64_t token = -1;
};
TokenSpecificity MostCommonToken(const torch::Tensor& coefficients,
                                 const torch::Tensor& tokens);

struct ExpertTokensOptions {
  std::string base_name = "base";  // The CSV's `base` column.
  int units = 8;                   // The first units listed (Figs. 23-24).
  int contexts = 5;                // Top contexts per unit.
  int context_tokens = 8;          // Tokens shown before the marked one.
  int batches = 8;                 // Test batches...
  int batch_size = 16;             // ...of this many windows.
};

struct ExpertTokensTables {
  // base,name,method,k,seed,unit,firing_rate,top_token_share: one row per
  // listed unit of each fit.
  std::string units;
  // The listing: per fit and unit, its top contexts, [[the token]] marked.
  std::string listing;
};

absl::StatusOr<ExpertTokensTables> ListExpertTokens(
    layers::LoadedModel& base, const std::string& base_path,
    const datasets::TokenShardSet& tokens, const datasets::Tokenizer& tokenizer,
    const std::vector<std::string>& replacement_paths,
    const ExpertTokensOptions& options);

}  // namespace sparse_layers::analysis

#endif  // SPARSE_LAYERS_ANALYSIS_REPLACEMENT_EXPERT_TOKENS_H_
