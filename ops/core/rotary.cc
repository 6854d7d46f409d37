#include "ops/core/rotary.h"

#include <cmath>

namespace sparse_layers::layers {
namespace {

// Llama 3.1's rescaled frequencies (arXiv:2407.21783), per RotaryScaling.
torch::Tensor Rescale(const torch::Tensor& frequency,
                      const RotaryScaling& scaling) {
  const double context = static_cast<double>(scaling.original_context);
  const torch::Tensor wavelength = 2 * M_PI / frequency;
  const torch::Tensor smooth =
      (context / wavelength - scaling.low_freq_factor) /
      (scaling.high_freq_factor - scaling.low_freq_factor);
  const torch::Tensor interpolated =
      (1 - smooth) * frequency / scaling.factor + smooth * frequency;
  return torch::where(
      wavelength < context / scaling.high_freq_factor, frequency,
      torch::where(wavelength > context / scaling.low_freq_factor,
                   frequency / scaling.factor, interpolated));
}

}  // namespace

RotaryEmbedding::RotaryEmbedding(int64_t head_dim, int64_t max_positions,
                                 double base, const RotaryScaling& scaling) {
  TORCH_CHECK(head_dim % 2 == 0, "rotary embedding needs an even head dim");
  // theta_i = base^(-2i/d), angle(p, i) = p * theta_i (RoFormer eq. 15).
  torch::Tensor inverse_frequency = torch::pow(
      base, -torch::arange(0, head_dim, 2, torch::kDouble) / head_dim);
  if (scaling.factor > 0) {
    inverse_frequency = Rescale(inverse_frequency, scaling);
  }
  const torch::Tensor angles = torch::outer(
      torch::arange(max_positions, torch::kDouble), inverse_frequency);
  const torch::Tensor doubled = torch::cat({angles, angles}, -1);
  cos_ = doubled.cos().to(torch::kFloat);
  sin_ = doubled.sin().to(torch::kFloat);
}

torch::Tensor RotaryEmbedding::Apply(const torch::Tensor& x) const {
  if (const int64_t dims = cos_.size(1); x.size(-1) > dims) {
    // Only the leading `dims` of each head turn; the rest pass through
    // (GPT-NeoX, arXiv:2204.06745 Sec. 2.1).
    return torch::cat({Apply(x.slice(-1, 0, dims)), x.slice(-1, dims)}, -1);
  }
  const int64_t length = x.size(-2);
  const int64_t half = x.size(-1) / 2;
  const torch::Tensor cos = cos_.slice(0, 0, length).to(x.device());
  const torch::Tensor sin = sin_.slice(0, 0, length).to(x.device());
  const torch::Tensor rotated =
      torch::cat({-x.slice(-1, half), x.slice(-1, 0, half)}, -1);
  return x * cos + rotated * sin;
}

}  // namespace sparse_layers::layers
