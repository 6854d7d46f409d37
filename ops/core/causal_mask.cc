#include "ops/core/causal_mask.h"

#include <limits>

namespace sparse_layers::layers {

torch::Tensor CausalMask::Softmax(const torch::Tensor& scores) const {
  const int64_t length = scores.size(-1);
  TORCH_CHECK(length <= context_length_, "CausalMask: ", length,
              " scores exceed the context length ", context_length_);
  const torch::Tensor mask =
      torch::full({length, length}, -std::numeric_limits<float>::infinity(),
                  torch::dtype(torch::kFloat).device(scores.device()))
          .triu(1);
  return torch::softmax(scores + mask, -1);
}

}  // namespace sparse_layers::layers
