// The replacement layers' training objective (MxD, arXiv:2505.21364 Sec. 3.1,
// as the authors' released sparse_autoencoder.py computes it): mean over
// tokens b and output dims o of (y_hat[b,o] - y[b,o])^2 / ||y[b,:]||_2.
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
