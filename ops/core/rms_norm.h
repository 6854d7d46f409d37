// RMSNorm (Zhang & Sennrich 2019): x / sqrt(mean(x^2) + eps) * gain. LibTorch
// 1.13 has no RMSNorm module.
#ifndef SPARSE_LAYERS_OPS_CORE_RMS_NORM_H_
#define SPARSE_LAYERS_OPS_CORE_RMS_NORM_H_

#include <torch/torch.h>

namespace sparse_layers::layers {

class RmsNormImpl : public torch::nn::Module {
 public:
  explicit RmsNormImpl(int64_t dim, double eps = 1e-6);
  torch::Tensor forward(const torch::Tensor& x);

  torch::Tensor weight;

 private:
  double eps_;
};
TORCH_MODULE(RmsNorm);

}  // namespace sparse_layers::layers

#endif  // SPARSE_LAYERS_OPS_CORE_RMS_NORM_H_
