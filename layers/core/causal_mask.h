// The causal softmax every attention layer shares (MHSA, Lorsa, MoHD): scores
// at positions j > i get -inf before the row softmax.
#ifndef SPARSE_LAYERS_LAYERS_CORE_CAUSAL_MASK_H_
#define SPARSE_LAYERS_LAYERS_CORE_CAUSAL_MASK_H_

#include <torch/torch.h>

namespace sparse_layers::layers {

class CausalMask {
 public:
  CausalMask() = default;
  explicit CausalMask(int64_t context_length);

  // softmax(scores + mask) over the last dimension; scores: (..., T, T) with
  // T <= context_length.
  torch::Tensor Softmax(const torch::Tensor& scores) const;

 private:
  torch::Tensor mask_;  // (T, T) additive: 0 on and below the diagonal.
};

}  // namespace sparse_layers::layers

#endif  // SPARSE_LAYERS_LAYERS_CORE_CAUSAL_MASK_H_
