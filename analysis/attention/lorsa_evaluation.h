// The Lorsa experiment's measurements (arXiv:2504.20938 Secs. 4-6 and App. E,
// at our scale) on fitted Lorsa layers and attention-output TopK SAEs of one
// base model. Every table is tidy CSV text (one observation a row) with the
// config's runtime.seed in a `seed` column, read by the claims engine:
//   fits:        per fit: pooled FVU, l0 and dead heads / latents on the
//                held-out attention cache of its block, CE of the base, with
//                that block's attention zero-ablated and with the fit spliced
//                in (the paper does not report the last); on_k_grid /
//                at_layer_k mark the K sweep's block (Fig. 2) and the
//                per-layer K (Fig. 3).
//   attribution: per Lorsa fit and head active on >= min_active held-out
//                tokens: the oblique-projection contributions of the original
//                heads (E.1) and the effective head count (E.2).
//   attribution_shares: per Lorsa fit, the share of those heads drawn from 1,
//                2, 3 and 4+ original heads (Fig. 13).
//   heads:       induction and previous-token scores on repeated random
//                word-piece spans, for every MHSA head of the base model
//                (attention patterns) and every Lorsa head (z patterns).
//   probe_heads: the MHSA heads' scores per probe sequence, the head with the
//                highest mean induction score marked.
//   probe:       per probe sequence, the base model's next-token loss inside
//                the first and the second copy of the span (in-context
//                copying).
//   induction_heads: per block, the best induction and previous-token scores
//                of the MHSA heads and of the Lorsa heads at the per-layer K,
//                the block of the strongest MHSA induction head marked.
//   top_activations: for the best-scoring Lorsa heads of each kind, the
//                held-out contexts where z is largest (text).
//   qk_spectra:  per Lorsa fit at the per-layer K and QK group, the sorted
//                relative singular values of W_Q and W_K (App. C, Fig. 10),
//                with the group's induction_rank (1: the highest induction
//                score of the fit's scored groups; 0: none of its heads
//                scored).
//   qk_rank:     per such group, the effective ranks of W_Q, W_K and W_Q W_K^T
//                and the best induction score of its OV heads (scored on >= 10
//                probe positions; empty when none is).
//   qk_rank_summary: per such fit with >= 3 scored groups, Spearman's rho
//                between a group's QK effective rank and its induction score
//                (App. C: induction circuits have the higher rank), and between
//                its W_Q and W_K effective ranks (their spectra align).
//   operand_heads: per Lorsa fit at the per-layer K and operand, its head
//                most specific to that operand on the "a + b =" grid
//                (operand_heads.h), the same statistic on the shuffled grid
//                and for the same Lorsa untrained; operand_summary: per
//                operand the most specific head of any block, the shuffled and
//                untrained maxima over the blocks, and the base model's loss of
//                the true sum's pieces against a sum 10 away's;
//                operand_grid: those two heads' z over the grid (Fig. 7's
//                operand plots).
#ifndef SPARSE_LAYERS_ANALYSIS_ATTENTION_LORSA_EVALUATION_H_
#define SPARSE_LAYERS_ANALYSIS_ATTENTION_LORSA_EVALUATION_H_

#include <torch/torch.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "datasets/text/token_shards.h"
#include "datasets/text/tokenizer.h"
#include "models/model_loader.h"
#include "pipelines/activations/activation_shards.h"

namespace sparse_layers::analysis {

// An attention-site fit (a Lorsa or an SAE on the attention output).
struct LorsaFit {
  std::string name, method;  // method: "lorsa" or "sae".
  config::FfnReplacement spec;
  layers::LoadedModel loaded;
};

// The fits at `paths`, sorted by method, block and K (the tables' order);
// fails on a fit that is not at the attention site.
absl::StatusOr<std::vector<LorsaFit>> LoadLorsaFits(
    const std::vector<std::string>& paths);

// Probe tokens (sequences, 1 + 2n): BOS (eos id), then a random span of n
// pieces twice, drawn under torch::manual_seed(1). The pieces are the words of
// `words_path` (one piece each; the base LM's repeated spans were drawn from
// them, so the heads are probed on the sequences that planted them) when
// given, else every word-initial piece ("\u2581...": random pieces of any kind
// make sequences the base LM never saw).
absl::StatusOr<torch::Tensor> ProbeTokens(const datasets::Tokenizer& tokenizer,
                                          int64_t n, int64_t sequences,
                                          const std::string& words_path);

// The key with the most values; ties go to the smallest key, -1 when empty
// (the K sweep's block: the block fitted at the most K, Fig. 2; the per-layer
// K: the K fitted at the most blocks, Fig. 3).
int MostFrequentKey(const std::map<int, std::set<int>>& values_of_key);

struct LorsaEvaluationOptions {
  int batches = 16;                  // CE batches of 16 windows.
  int64_t windows = 256;             // Cache windows for FVU, l0, dead heads.
  int64_t attribution_windows = 32;  // Cache windows for attribution.
  int64_t min_active = 20;           // Active tokens for an attributed head.
  int probe_sequences = 64;
  int probe_period = 16;     // Length of the repeated span.
  std::string probe_words;   // Optional word list (see ProbeTokens).
  int listing_windows = 64;  // Held-out windows for top activations.
  // Window length for CE and listings (0: the base model's context; a
  // pretrained model's is longer than the paper's n, Lorsa Sec. 3.2).
  int sequence_length = 0;
  // fits.csv alone: a sweep of one block's Lorsa shape (the QK-head binding
  // of Lorsa App. B, Fig. 9), whose fits the other tables do not compare.
  bool fits_only = false;
};

struct LorsaTables {
  std::string fits, attribution, attribution_shares, heads, probe_heads, probe,
      induction_heads, top_activations, qk_spectra, qk_rank, qk_rank_summary,
      operand_heads, operand_summary, operand_grid;
  // Per block fitted by both methods at the per-layer K: the agreement of
  // their per-token errors (CompareErrors).
  std::string errors;
};

// Every table (fits.csv alone with options.fits_only), on `base` and its
// held-out `tokens`, with `caches` the held-out attention caches by block.
absl::StatusOr<LorsaTables> EvaluateLorsa(
    const layers::LoadedModel& base, const datasets::Tokenizer& tok,
    const datasets::TokenShardSet& tokens,
    const std::map<int, std::unique_ptr<datasets::ActivationSet>>& caches,
    std::vector<LorsaFit>& fits, const LorsaEvaluationOptions& options);

}  // namespace sparse_layers::analysis

#endif  // SPARSE_LAYERS_ANALYSIS_ATTENTION_LORSA_EVALUATION_H_
