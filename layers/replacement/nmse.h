// The replacement layers' training objective (seed-mxd.md 4.1, released code):
// mean over tokens b and output dims o of (y_hat[b,o] - y[b,o])^2 /
// ||y[b,:]||_2.
#ifndef SPARSE_LAYERS_LAYERS_REPLACEMENT_NMSE_H_
#define SPARSE_LAYERS_LAYERS_REPLACEMENT_NMSE_H_

#include <torch/torch.h>

namespace sparse_layers::layers {

inline torch::Tensor NormalisedMse(const torch::Tensor& prediction,
                                   const torch::Tensor& target) {
  const torch::Tensor norms = target.norm(2, -1, /*keepdim=*/true);
  return ((prediction - target).pow(2) / norms).mean();
}

}  // namespace sparse_layers::layers

#endif  // SPARSE_LAYERS_LAYERS_REPLACEMENT_NMSE_H_
