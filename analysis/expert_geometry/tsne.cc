#include "analysis/expert_geometry/tsne.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace sparse_layers::analysis {
torch::Tensor PairwiseSquaredDistances(const torch::Tensor& x) {
  const torch::Tensor norms = x.pow(2).sum(1);
  return (norms.unsqueeze(1) + norms.unsqueeze(0) - 2 * x.matmul(x.t()))
      .clamp_min(0);
}

torch::Tensor ConditionalAffinities(const torch::Tensor& squared_distances,
                                    double perplexity) {
  const int64_t n = squared_distances.size(0);
  const torch::Tensor d2 = squared_distances.to(torch::kFloat64);
  const torch::Tensor off_diagonal =
      1 - torch::eye(n, torch::TensorOptions().dtype(torch::kFloat64));
  const double target = std::log(perplexity);
  // Per-row precision beta = 1 / (2 sigma^2), bisected in log space: entropy
  // falls as beta grows.
  torch::Tensor low = torch::full(
      {n, 1}, -std::numeric_limits<double>::infinity(), torch::kFloat64);
  torch::Tensor high = torch::full(
      {n, 1}, std::numeric_limits<double>::infinity(), torch::kFloat64);
  torch::Tensor beta = torch::ones({n, 1}, torch::kFloat64);
  // Distances relative to each row's nearest neighbour keep exp() in range.
  const torch::Tensor shifted =
      d2 - (d2 + (1 - off_diagonal) * std::numeric_limits<double>::max())
               .amin(1, /*keepdim=*/true);
  torch::Tensor p;
  for (int step = 0; step < 200; ++step) {
    p = torch::exp(-shifted * beta) * off_diagonal;
    const torch::Tensor sum = p.sum(1, /*keepdim=*/true);
    p = p / sum;
    // H = log(sum) + beta * sum_j p_j d_j (in the shifted distances).
    const torch::Tensor entropy =
        torch::log(sum) + beta * (p * shifted).sum(1, /*keepdim=*/true);
    const torch::Tensor too_flat = entropy > target;  // beta must grow.
    if ((entropy - target).abs().max().item<double>() < 1e-10) break;
    low = torch::where(too_flat, beta, low);
    high = torch::where(too_flat, high, beta);
    beta = torch::where(torch::isfinite(high) & torch::isfinite(low),
                        (low + high) / 2,
                        torch::where(too_flat, beta * 2, beta / 2));
  }
  return p;
}

absl::StatusOr<TsneMap> Tsne(const torch::Tensor& points,
                             const TsneOptions& options) {
  if (points.dim() != 2 || points.size(0) < 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("t-SNE needs at least 3 points as an (n, d) matrix, got ",
                     points.dim() == 2 ? points.size(0) : 0, " points"));
  }
  const int64_t n = points.size(0);
  if (!(options.perplexity > 1) || options.perplexity >= n - 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("t-SNE perplexity ", options.perplexity,
                     " must lie in (1, n - 1) for n = ", n, " points"));
  }
  const torch::Tensor x = points.to(torch::kFloat64);
  if (!torch::isfinite(x).all().item<bool>())
    return absl::InvalidArgumentError("t-SNE points are not all finite");
  const torch::Tensor conditional =
      ConditionalAffinities(PairwiseSquaredDistances(x), options.perplexity);
  // Symmetric joint affinities p_ij = (p_{j|i} + p_{i|j}) / 2n.
  const torch::Tensor p =
      ((conditional + conditional.t()) / (2.0 * n)).clamp_min(1e-12);
  const torch::Tensor off_diagonal =
      1 - torch::eye(n, torch::TensorOptions().dtype(torch::kFloat64));
  const double rate =
      options.learning_rate > 0
          ? options.learning_rate
          : std::max(n / options.early_exaggeration / 4.0, 50.0);

  torch::manual_seed(options.seed);
  torch::Tensor y = torch::randn({n, 2}, torch::kFloat64) * 1e-2;
  torch::Tensor update = torch::zeros_like(y);
  torch::Tensor gains = torch::ones_like(y);
  torch::Tensor q;
  for (int step = 0; step < options.iterations; ++step) {
    const bool early = step < options.exaggeration_iterations;
    // Student-t kernel q_ij ~ 1 / (1 + |y_i - y_j|^2) (Eq. 4).
    const torch::Tensor kernel =
        off_diagonal / (1 + PairwiseSquaredDistances(y));
    q = (kernel / kernel.sum()).clamp_min(1e-12);
    // dC/dy_i = 4 sum_j (p_ij - q_ij) (y_i - y_j) kernel_ij (Eq. 5).
    const torch::Tensor weights =
        ((early ? options.early_exaggeration : 1.0) * p - q) * kernel;
    const torch::Tensor gradient =
        4 * (weights.sum(1, /*keepdim=*/true) * y - weights.matmul(y));
    // Delta-bar-delta gains (Jacobs 1988), as in the reference implementation.
    const torch::Tensor same_sign = (gradient > 0) == (update > 0);
    gains = torch::where(same_sign, gains * 0.8, gains + 0.2).clamp_min(0.01);
    update = (early ? 0.5 : 0.8) * update - rate * gains * gradient;
    y = y + update;
    y = y - y.mean(0, /*keepdim=*/true);
  }
  TsneMap map;
  map.embedding = y;
  const torch::Tensor kernel = off_diagonal / (1 + PairwiseSquaredDistances(y));
  q = (kernel / kernel.sum()).clamp_min(1e-12);
  map.kl_divergence =
      (p * off_diagonal * torch::log(p / q)).sum().item<double>();
  return map;
}

}  // namespace sparse_layers::analysis
