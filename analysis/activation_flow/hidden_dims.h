// Hidden-dimension statistics of the MoHD observation study (arXiv:2412.05644
// Secs. 2.1 and 3): per-token magnitudes m = x (.) x, the long-tail share of
// the top dims (M1), thresholded sparsity (M2), magnitude flow between sites
// (M3), and the dims that consecutive tokens share against a shuffled-token
// null (M4, M5).
#ifndef SPARSE_LAYERS_ANALYSIS_ACTIVATION_FLOW_HIDDEN_DIMS_H_
#define SPARSE_LAYERS_ANALYSIS_ACTIVATION_FLOW_HIDDEN_DIMS_H_

#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace sparse_layers::analysis {

// m_i = x_i^2 per token (Eq. 1); x: (..., D) -> float64 (..., D).
torch::Tensor Magnitudes(const torch::Tensor& x);

// M1: mean over tokens of the share of sum_i m_i held by that token's top
// ceil(p D) dims, for each p in `fractions`; m: (N, D).
std::vector<double> TopShare(const torch::Tensor& m,
                             const std::vector<double>& fractions);

// M2: mean over tokens of the fraction of dims with m_i < c * mean_i(m_i),
// the relative threshold of 4.3 (the paper's epsilon is not given).
double RelativeSparsity(const torch::Tensor& m, double c);

// M3: mean over tokens of sum_i m_i (the "magnitude" flowing through a site).
double MeanEnergy(const torch::Tensor& m);

// Median of all m entries.
double MedianMagnitude(const torch::Tensor& m);

// H_t: the token's round((1 - q) D) dims of largest m (ties at the cutoff
// kept); m: (S, T, D) -> bool (S, T, D). q = 0.8 keeps the top 20%.
torch::Tensor HighDims(const torch::Tensor& m, double q);

// M4: mean over every window of w consecutive tokens (within a sequence) of
// |H_t (intersect) ... (intersect) H_{t+w-1}|; high: (S, T, D) bool.
double ConsecutiveSharing(const torch::Tensor& high, int64_t w);

// M4 null (ii): the same statistic on `windows` sets of w tokens drawn at
// random positions of w different sequences (needs S >= w).
double ShuffledSharing(const torch::Tensor& high, int64_t w, int64_t windows,
                       uint64_t seed);

// M4 null (i): dims expected in all of w independent sets of size (1 - q) D.
double IndependentSharing(int64_t d, double q, int64_t w);

// M5 over windows of w tokens: dims high in all w, and dims high in exactly
// one token divided by w (unique per token).
struct SharedUnique {
  double in_all = 0;
  double unique_per_token = 0;
};
// Over every window of w consecutive tokens.
SharedUnique ConsecutiveSharedUnique(const torch::Tensor& high, int64_t w);
// Over `windows` random sets of w tokens from w different sequences.
SharedUnique ShuffledSharedUnique(const torch::Tensor& high, int64_t w,
                                  int64_t windows, uint64_t seed);

}  // namespace sparse_layers::analysis

#endif  // SPARSE_LAYERS_ANALYSIS_ACTIVATION_FLOW_HIDDEN_DIMS_H_
