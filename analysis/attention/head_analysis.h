// Measurements of attention layers and their Lorsa replacements
// (arXiv:2504.20938 Secs. 4-6): induction and previous-token scores of
// attention patterns, per-head outputs of an MHSA layer, and the oblique
// projection that attributes each Lorsa head to the original heads (E.1, E.2).
#ifndef SPARSE_LAYERS_ANALYSIS_ATTENTION_HEAD_ANALYSIS_H_
#define SPARSE_LAYERS_ANALYSIS_ATTENTION_HEAD_ANALYSIS_H_

#include <torch/torch.h>

#include <cstdint>

#include "layers/attention/causal_attention.h"

namespace sparse_layers::analysis {

// Induction score per head: patterns (B, H, T, T) of sequences whose tokens
// from `start` on repeat with period n (x_i = x_{i-n}); the mean over the
// second copy's positions i of the attention to i - n + 1, the token after
// the earlier occurrence of the current one (our score for the induction heads
// of arXiv:2504.20938 Sec. 6.1). -> (H).
torch::Tensor InductionScores(const torch::Tensor& pattern, int64_t start,
                              int64_t period);

// Previous-token score per head: mean over positions i >= 1 of the attention
// to i - 1. -> (H).
torch::Tensor PreviousTokenScores(const torch::Tensor& pattern);

// Lorsa heads' z-pattern scores on the same kind of probe sequences (z
// patterns, arXiv:2504.20938 Sec. 5.1): z_i = sum_{j <= i} A_ij v_j, so at each
// position where a head is active, the share of sum_j |A_ij v_j| that comes
// from j = i - n + 1 (induction; second copy only) or from j = i - 1 (previous
// token), averaged over those positions. pattern: (B, H_QK, T, T) of the
// consecutive QK groups; values, activations: (B, T, H). -> (H) each; the
// counts are the active positions each mean is over.
struct ZPatternScores {
  torch::Tensor induction, previous_token;
  torch::Tensor induction_count, previous_token_count;
};
ZPatternScores LorsaZPatternScores(const torch::Tensor& pattern,
                                   const torch::Tensor& values,
                                   const torch::Tensor& activations,
                                   int64_t start, int64_t period);

// Output of each head of an MHSA layer without the (absent) output bias:
// (B, T, H, d), summing over H to the layer's output (arXiv:2504.20938
// App. E.1).
// Also returns the pattern (B, H, T, T).
struct HeadOutputs {
  torch::Tensor outputs;
  torch::Tensor pattern;
};
HeadOutputs MhsaHeadOutputs(layers::CausalSelfAttentionImpl& attention,
                            const torch::Tensor& x);

// Oblique projection of original-head outputs onto the active Lorsa heads'
// outputs (arXiv:2504.20938 App. E.1): per token, c^m = argmin ||o^m - B c||
// with B the K active Lorsa head outputs; c^m_h, averaged over the tokens
// where Lorsa head h is active, is MHSA head m's contribution to h.
class HeadAttribution {
 public:
  HeadAttribution(int64_t lorsa_heads, int64_t mhsa_heads);
  // lorsa_outputs: (N, K, d) outputs of the active heads, whose indices are
  // active (N, K); mhsa_outputs: (N, M, d).
  void Add(const torch::Tensor& lorsa_outputs, const torch::Tensor& active,
           const torch::Tensor& mhsa_outputs);
  // (H, M) mean coefficients per Lorsa head, negatives clipped to 0 and each
  // row renormalised to sum 1 (E.2); rows of never-active heads are 0.
  torch::Tensor Contributions() const;
  // Raw mean coefficients (H, M) before clipping: rows sum to about 1 when
  // the Lorsa layer reproduces the MHSA output.
  torch::Tensor MeanCoefficients() const;
  torch::Tensor ActiveCounts() const { return counts_; }

 private:
  torch::Tensor sums_;    // (H, M) float64.
  torch::Tensor counts_;  // (H) int64.
};

// Per row of contributions (H, M): the fewest original heads whose sorted
// contributions reach `mass` (E.2: 90%); 0 for all-zero rows. -> (H) int64.
torch::Tensor EffectiveHeadCounts(const torch::Tensor& contributions,
                                  double mass = 0.9);

// How alike two replacements' per-token errors are (arXiv:2504.20938 App. G,
// Figs. 14-15: Lorsa's and the SAE's "dark matter"), on the same rows.
struct ErrorAgreement {
  int64_t tokens = 0;
  // Mean cosine of the two error vectors of each token, and of each token's
  // first error with another token's second (rows paired after rolling by
  // half their count): the null of errors that merely share a direction.
  double cosine = 0;
  double cosine_shuffled = 0;
  // Pearson r of the two errors' norms over tokens.
  double norm_correlation = 0;
};

// a, b: (N, d) errors (prediction - target) of two layers on the same N rows.
ErrorAgreement CompareErrors(const torch::Tensor& a, const torch::Tensor& b);

// Direct logit effect of writing `direction` (d) into the residual stream:
// the unembedding (V, d) applied to it through the final norm's gain (d),
// centred first under LayerNorm, the norm's per-token scale left out; minus
// its mean over the vocabulary, so it reads as logit differences (Lorsa
// arXiv:2504.20938 Fig. 11, the logits each rediscovered head moves). -> (V).
torch::Tensor DirectLogitEffect(const torch::Tensor& direction,
                                const torch::Tensor& unembedding,
                                const torch::Tensor& norm_gain,
                                bool layer_norm);

// Pearson r of two vectors of equal length; 0 when either is constant.
double PearsonCorrelation(const torch::Tensor& x, const torch::Tensor& y);

// Spearman's rank correlation: Pearson r of the ranks, ties sharing their
// average rank.
double SpearmanCorrelation(const torch::Tensor& x, const torch::Tensor& y);

// The QK circuit rank of Lorsa App. C (Fig. 10): the singular values of a
// (d, D_QK) projection, sorted descending and divided by the largest.
torch::Tensor RelativeSingularValues(const torch::Tensor& matrix);

// exp of the entropy of sigma / sum(sigma) (Roy and Vetterli's effective
// rank): 1 for a rank-one matrix, min(rows, cols) for a flat spectrum.
double EffectiveRank(const torch::Tensor& matrix);

}  // namespace sparse_layers::analysis

#endif  // SPARSE_LAYERS_ANALYSIS_ATTENTION_HEAD_ANALYSIS_H_
