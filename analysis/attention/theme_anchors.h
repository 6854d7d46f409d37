// Theme-anchor heads (Lorsa, arXiv:2504.20938 Sec. 6.3, Fig. 12): Lorsa heads
// that "maintain persistent topic representations", active across a topic's
// text and reading tokens far back. Our analogue takes the held-out corpus's
// sources as topics (DomainHalves: each source's documents dealt into two
// halves) and, per Lorsa head at the per-layer K, from windows of the base
// model's context (position 0, the sink, left out):
//   domain:      the source with the highest mean z per token on half 0;
//   selectivity: on half 1, that source's share of the head's mean z per
//                token summed over sources (1 / sources by chance; choosing on
//                one half and measuring on the other keeps the choice from
//                inflating it);
//   persistence: the share of that source's half-1 tokens the head is active
//                on (a theme anchor fires throughout the text, not on one
//                word);
//   reach:       the z-weighted mean distance back to the keys it reads on
//                them, sum over t, s of A(t, s) v(s) (t - s) over sum of z (a
//                theme anchor reads topic words far back, not the token
//                before).
// A candidate is a head active on >= min_active of those tokens with
// persistence and reach at their floors. The same statistics with the
// windows' sources permuted within each half are the control: what the
// choice of the best of many heads gives when sources carry no signal.
//   theme_anchors.csv:        every head, both labellings;
//   theme_anchor_summary.csv: per labelling the candidates and the best
//                             candidate's selectivity; found = 1 when both
//                             labellings have a candidate;
//   theme_anchor_examples.txt: the best candidate's most active window, its
//                             active tokens [[marked]], and the keys it
//                             reads most.
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
  double min_persistence = 0.1;
  double min_reach = 8;  // Tokens back.
  int64_t shuffle_seed = 1;
  int listing_tokens = 96;  // Of the example window.
};

// Per window and Lorsa head, sums over the window's positions after the
// first, each (windows, H) in double.
struct HeadWindowSums {
  torch::Tensor z;         // z where the head is selected, 0 elsewhere.
  torch::Tensor active;    // Positions where it is selected.
  torch::Tensor distance;  // At those positions, sum_s A(t, s) v(s) (t - s).
};
HeadWindowSums WindowSums(const layers::LorsaImpl& lorsa,
                          const layers::LorsaOutput& out);

// Per head (H), the statistics above from sums over windows labelled with a
// source (0 .. sources - 1) and a half (0 or 1), each window `positions`
// scored positions long.
struct HeadThemes {
  torch::Tensor domain;                                   // Long.
  torch::Tensor selectivity, persistence, reach, active;  // Double.
};
HeadThemes ScoreThemes(const HeadWindowSums& sums,
                       const torch::Tensor& window_source,
                       const torch::Tensor& window_half, int64_t sources,
                       int64_t positions);

// `labels` with each half's entries permuted by `seed`.
torch::Tensor PermuteWithinHalves(const torch::Tensor& labels,
                                  const torch::Tensor& half, int64_t seed);

struct ThemeAnchorTables {
  std::string heads, summary, examples;
};

// Every table for the per-layer-K Lorsa fits of `base` on `domains` (at least
// two with a whole window of the model's context in each half; sources
// without one are left out and named in the summary).
absl::StatusOr<ThemeAnchorTables> FindThemeAnchors(
    const layers::LoadedModel& base, const datasets::Tokenizer& tokenizer,
    const std::vector<datasets::DomainTokens>& domains,
    std::vector<LorsaFit>& fits, const ThemeAnchorOptions& options);

}  // namespace sparse_layers::analysis

#endif  // SPARSE_LAYERS_ANALYSIS_ATTENTION_THEME_ANCHORS_H_
