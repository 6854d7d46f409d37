// Number of trainable weights of a module (every registered parameter).
#ifndef SPARSE_LAYERS_OPS_CORE_PARAMETER_COUNT_H_
#define SPARSE_LAYERS_OPS_CORE_PARAMETER_COUNT_H_

#include <torch/torch.h>

namespace sparse_layers::layers {

inline int64_t CountParameters(const torch::nn::Module& module) {
  int64_t count = 0;
  for (const torch::Tensor& parameter : module.parameters()) {
    count += parameter.numel();
  }
  return count;
}

}  // namespace sparse_layers::layers

#endif  // SPARSE_LAYERS_OPS_CORE_PARAMETER_COUNT_H_
