// Theme-anchor heads (Lorsa, arXiv:2504.20938 Sec. 6.3, Fig. 12): Lorsa heads
// that "maintain persistent topic representations", active across a topic's
// text because they read topic words far back. Our analogue takes the
// held-out corpus's sources as topics (DomainHalves: each source's documents
// dealt into two halves) and, per Lorsa head at the per-layer K, on windows of
// the fits' length (position 0, the sink, left out as a query), per half:
//   selectivity: the head's mean z per token on a source as a share of its
//                sum over sources (chance 1 / sources);
//   persistence: the share of that source's tokens the head is active on (a
//                theme anchor fires throughout the text, not on one word);
//   reach:       the mean distance back to the keys it reads, weighted by
//                |A(t, s) v(s)| over keys s >= 1;
//   sink_share:  the share of that read weight on key 0 (the sink).
// Everything that selects is made on half 0: the head's source, the candidate
// floors (>= min_active active tokens, persistence, reach, sink share) and the
// best candidate (highest half-0 selectivity); that head's half-1 numbers are
// the evidence, so neither choice inflates them. Two controls:
//   shuffled: the same selection with the windows' sources permuted within
//             each half, averaged over `permutations` draws (what choosing
//             the best of many heads gives when sources carry no signal; a
//             draw without a candidate counts chance);
//   local:    the best head's half-1 selectivity with its attention cut to
//             the last `local_keys` keys (renormalised): a theme anchor's
//             topic signal comes from far back, so it falls; a head selective
//             through the current words keeps it.
//   theme_anchors.csv:         every head's numbers on both halves;
//   theme_anchor_summary.csv:  per seed the candidates, the best one's
//                              half-1 selectivity, the shuffled and local
//                              controls; found = 1 with a candidate;
//   theme_anchor_examples.txt: the best candidate's most active half-1
//                              window, its active tokens [[marked]], and the
//                              keys it reads most.
#ifndef SPARSE_LAYERS_ANALYSIS_ATTENTION_THEME_ANCHORS_H_
#define SPARSE_LAYERS_ANALYSIS_ATTENTION_THEME_ANCHORS_H_

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "analysis/attention/lorsa_evaluation.h"
#include "datasets/text/domain_documents.h"
#include "datasets/text/tokenizer.h"
#include "layers/attention/lorsa.h"
#include "models/model_loader.h"

namespace sparse_layers::analysis {

struct ThemeAnchorOptions {
  int64_t min_active = 20;
  double min_persistence = 0.2;
  double min_reach = 8;         // Tokens back.
  double max_sink_share = 0.5;  // A theme anchor reads words, not the sink.
  int permutations = 20;
  int64_t local_keys = 8;
  int sequence_length = 0;  // Window length (0: the base model's context).
  int listing_tokens = 96;  // Of the example window.
};

// Per window and Lorsa head, sums over the window's query positions after
// the first where the head is active (selected with z > 0), each (windows, H)
// in double.
struct HeadWindowSums {
  torch::Tensor z;         // z.
  torch::Tensor active;    // Positions.
  torch::Tensor read;      // sum_{s >= 1} A(t, s) |v(s)|.
  torch::Tensor distance;  // sum_{s >= 1} A(t, s) |v(s)| (t - s).
  torch::Tensor sink;      // A(t, 0) |v(0)|.
};
HeadWindowSums WindowSums(const layers::LorsaImpl& lorsa,
                          const layers::LorsaOutput& out);

// Per head (H), from sums over windows labelled with a source (0 .. sources -
// 1) and a half (0 or 1), each window `positions` query positions long: the
// source of its highest half-0 mean z (-1 for a head never active on half 0),
// and (2, H) tensors indexed by half of the statistics at that source.
struct HeadThemes {
  torch::Tensor domain;  // Long.
  torch::Tensor selectivity, persistence, reach, sink_share, active;
};
HeadThemes ScoreThemes(const HeadWindowSums& sums,
                       const torch::Tensor& window_source,
                       const torch::Tensor& window_half, int64_t sources,
                       int64_t positions);

// Heads meeting the floors on half 0, (H) bool.
torch::Tensor Candidates(const HeadThemes& themes,
                         const ThemeAnchorOptions& options);

// `labels` with each half's entries permuted by `seed`.
torch::Tensor PermuteWithinHalves(const torch::Tensor& labels,
                                  const torch::Tensor& half, int64_t seed);

// One head's z (B, T) with each query's attention cut to its last `keys`
// keys and renormalised, ReLU'd, where the head is active, 0 elsewhere.
torch::Tensor LocalZ(const layers::LorsaImpl& lorsa,
                     const layers::LorsaOutput& out, int64_t head,
                     int64_t keys);

struct ThemeAnchorTables {
  std::string heads, summary, examples;
};

// Every table for the per-layer-K Lorsa fits (ReLU'd z, Lorsa App. B.4) of
// `base` on `domains`; sources without a whole window in each half are left
// out and named in the summary, and with fewer than two left found = 0.
absl::StatusOr<ThemeAnchorTables> FindThemeAnchors(
    const layers::LoadedModel& base, const datasets::Tokenizer& tokenizer,
    const std::vector<datasets::DomainTokens>& domains,
    std::vector<LorsaFit>& fits, const ThemeAnchorOptions& options);

}  // namespace sparse_layers::analysis

#endif  // SPARSE_LAYERS_ANALYSIS_ATTENTION_THEME_ANCHORS_H_
