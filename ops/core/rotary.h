// Rotary position embedding (Su et al. 2021, RoFormer), rotating pairs
// (i, i + d/2) of each head dimension as GPT-NeoX and Llama do.
#ifndef SPARSE_LAYERS_OPS_CORE_ROTARY_H_
#define SPARSE_LAYERS_OPS_CORE_ROTARY_H_

#include <torch/torch.h>

namespace sparse_layers::layers {

// Llama 3.1's frequency-dependent rescaling of the rotary frequencies for long
// contexts (arXiv:2407.21783; rope_scaling type "llama3" in its released
// configs): wavelengths below original_context / high_freq_factor are kept,
// those above original_context / low_freq_factor divided by `factor`, and the
// band between interpolated. factor 0 means none.
struct RotaryScaling {
  double factor = 0;
  double low_freq_factor = 1;
  double high_freq_factor = 4;
  int64_t original_context = 8192;
};

class RotaryEmbedding {
 public:
  RotaryEmbedding() = default;
  RotaryEmbedding(int64_t head_dim, int64_t max_positions, double base = 10000,
                  const RotaryScaling& scaling = {});

  // x: (..., T, D) with T <= max_positions; positions 0..T-1. The leading
  // head_dim of D >= head_dim turn, the rest pass through (partial rotary).
  torch::Tensor Apply(const torch::Tensor& x) const;
  bool defined() const { return cos_.defined(); }

 private:
  torch::Tensor cos_;  // (max_positions, head_dim)
  torch::Tensor sin_;
};

}  // namespace sparse_layers::layers

#endif  // SPARSE_LAYERS_OPS_CORE_ROTARY_H_
