#include "analysis/activation_flow/hidden_dims.h"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cmath>

namespace sparse_layers::analysis {
namespace {

// Per-dim counts of high tokens in `windows` random windows of w tokens from
// w distinct sequences (a random position in each) -> (windows, D).
torch::Tensor RandomWindowCounts(const torch::Tensor& high, int64_t w,
                                 int64_t windows, uint64_t seed) {
  TORCH_CHECK(high.size(0) >= w, "shuffled windows need at least w sequences");
  at::Generator generator = at::make_generator<at::CPUGeneratorImpl>(seed);
  std::vector<torch::Tensor> counts;
  counts.reserve(windows);
  for (int64_t i = 0; i < windows; ++i) {
    const torch::Tensor sequences =
        torch::randperm(high.size(0), generator, torch::kLong).slice(0, 0, w);
    const torch::Tensor positions =
        torch::randint(high.size(1), {w}, generator, torch::kLong);
    counts.push_back(
        high.index({sequences, positions}).to(torch::kShort).sum(0));
  }
  return torch::stack(counts);
}

// Per-dim counts of high tokens in every window of w consecutive tokens:
// (S, T, D) -> (S, T - w + 1, D), summed slice by slice to stay small.
torch::Tensor ConsecutiveWindowCounts(const torch::Tensor& high, int64_t w) {
  TORCH_CHECK(high.dim() == 3 && high.size(1) >= w, "need (S, T >= w, D)");
  const int64_t n = high.size(1) - w + 1;
  torch::Tensor count = torch::zeros({high.size(0), n, high.size(2)},
                                     torch::TensorOptions(torch::kShort));
  for (int64_t j = 0; j < w; ++j) {
    count += high.slice(1, j, j + n).to(torch::kShort);
  }
  return count;
}

SharedUnique SummariseCounts(const torch::Tensor& count, int64_t w) {
  const auto mean_dims = [&](const torch::Tensor& hit) {
    return hit.sum(-1).to(torch::kDouble).mean().item<double>();
  };
  return {mean_dims(count.eq(w)),
          mean_dims(count.eq(1)) / static_cast<double>(w)};
}

}  // namespace

torch::Tensor Magnitudes(const torch::Tensor& x) {
  return x.to(torch::kDouble).square();
}

std::vector<double> TopShare(const torch::Tensor& m,
                             const std::vector<double>& fractions) {
  const torch::Tensor sorted = std::get<0>(m.sort(-1, /*descending=*/true));
  const torch::Tensor cumulative = sorted.cumsum(-1);
  const torch::Tensor total = cumulative.select(-1, -1).clamp_min(1e-300);
  const int64_t d = m.size(-1);
  std::vector<double> shares;
  for (double p : fractions) {
    const int64_t n =
        std::clamp<int64_t>(static_cast<int64_t>(std::ceil(p * d)), 1, d);
    shares.push_back(
        (cumulative.select(-1, n - 1) / total).mean().item<double>());
  }
  return shares;
}

double RelativeSparsity(const torch::Tensor& m, double c) {
  const torch::Tensor threshold = c * m.mean(-1, /*keepdim=*/true);
  return m.lt(threshold).to(torch::kDouble).mean().item<double>();
}

double MeanEnergy(const torch::Tensor& m) {
  return m.sum(-1).mean().item<double>();
}

double MedianMagnitude(const torch::Tensor& m) {
  return m.flatten().median().item<double>();
}

torch::Tensor HighDims(const torch::Tensor& m, double q) {
  const int64_t d = m.size(-1);
  // The round((1 - q) D) largest: their smallest is the k-th smallest.
  const int64_t keep = std::clamp<int64_t>(std::llround((1.0 - q) * d), 1, d);
  const int64_t k = d - keep + 1;
  const torch::Tensor threshold =
      std::get<0>(m.kthvalue(k, -1, /*keepdim=*/true));
  return m.ge(threshold);
}

double ConsecutiveSharing(const torch::Tensor& high, int64_t w) {
  return ConsecutiveSharedUnique(high, w).in_all;
}

double ShuffledSharing(const torch::Tensor& high, int64_t w, int64_t windows,
                       uint64_t seed) {
  return ShuffledSharedUnique(high, w, windows, seed).in_all;
}

double IndependentSharing(int64_t d, double q, int64_t w) {
  return static_cast<double>(d) * std::pow(1.0 - q, static_cast<double>(w));
}

SharedUnique ConsecutiveSharedUnique(const torch::Tensor& high, int64_t w) {
  return SummariseCounts(ConsecutiveWindowCounts(high, w), w);
}

SharedUnique ShuffledSharedUnique(const torch::Tensor& high, int64_t w,
                                  int64_t windows, uint64_t seed) {
  return SummariseCounts(RandomWindowCounts(high, w, windows, seed), w);
}

}  // namespace sparse_layers::analysis
