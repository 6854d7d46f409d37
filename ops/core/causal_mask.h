// The causal softmax every attention layer shares (MHSA, Lorsa, MoHD): scores
// at positions j > i get -inf before the row softmax.
#ifndef SPARSE_LAYERS_OPS_CORE_CAUSAL_MASK_H_
#define SPARSE_LAYERS_OPS_CORE_CAUSAL_MASK_H_

#include <torch/torch.h>

namespace sparse_layers::layers {

class CausalMask {
 public:
  CausalMask() = default;
  explicit CausalMask(int64_t context_length)
      : context_length_(context_length) {}

  // softmax(scores + mask) over the last dimension; scores: (..., T, T) with
  // T <= context_length. The (T, T) additive mask (0 on and below the
  // diagonal, -inf above) is built per call: a fraction of the scores' size,
  // where a kept context_length^2 buffer per layer is 64 MiB at 4096.
  torch::Tensor Softmax(const torch::Tensor& scores) const;

 private:
  int64_t context_length_ = 0;
};

}  // namespace sparse_layers::layers

#endif  // SPARSE_LAYERS_OPS_CORE_CAUSAL_MASK_H_
