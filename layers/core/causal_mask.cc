#include "layers/core/causal_mask.h"

#include <limits>

namespace sparse_layers::layers {

CausalMask::CausalMask(int64_t context_length)
    : mask_(torch::full({context_length, context_length},
                        -std::numeric_limits<float>::infinity())
                .triu(1)) {}

torch::Tensor CausalMask::Softmax(const torch::Tensor& scores) const {
  const int64_t length = scores.size(-1);
  return torch::softmax(
      scores +
          mask_.slice(0, 0, length).slice(1, 0, length).to(scores.device()),
      -1);
}

}  // namespace sparse_layers::layers
