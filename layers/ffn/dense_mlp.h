// Dense feed-forward layers: the two-matrix MLP W_out act(W_in x) with GELU,
// ReLU or SoLU (Elhage et al. 2022: LN(h * softmax(h))), and the gated
// GLUs of Shazeer 2020, W_out (act(W_gate x) * W_up x) with SiLU (SwiGLU) or
// GELU (GEGLU).
#ifndef SPARSE_LAYERS_LAYERS_FFN_DENSE_MLP_H_
#define SPARSE_LAYERS_LAYERS_FFN_DENSE_MLP_H_

#include <torch/torch.h>

#include "layers/ffn/feed_forward.h"

namespace sparse_layers::layers {

enum class Activation { kGelu, kRelu, kSolu, kSilu };

// Reads the options' bias and gelu_tanh (GELU only); the GLUs read neither.
class DenseMlpImpl : public FeedForwardImpl {
 public:
  DenseMlpImpl(const FeedForwardOptions& options, Activation activation);
  torch::Tensor Forward(const torch::Tensor& x,
                        const HookPoint& hidden) override;
  int64_t ForwardFlopsPerToken() const override;

  torch::nn::Linear in{nullptr};
  torch::nn::Linear out{nullptr};
  torch::nn::LayerNorm solu_norm{nullptr};  // SoLU only.

 private:
  FeedForwardOptions options_;
  Activation activation_;
};

class GatedMlpImpl : public FeedForwardImpl {
 public:
  // gate_activation: kSilu (SwiGLU) or kGelu (GEGLU).
  GatedMlpImpl(const FeedForwardOptions& options, Activation gate_activation);
  torch::Tensor Forward(const torch::Tensor& x,
                        const HookPoint& hidden) override;
  int64_t ForwardFlopsPerToken() const override;

  torch::nn::Linear gate{nullptr};
  torch::nn::Linear up{nullptr};
  torch::nn::Linear down{nullptr};

 private:
  FeedForwardOptions options_;
  Activation gate_activation_;
};

}  // namespace sparse_layers::layers

#endif  // SPARSE_LAYERS_LAYERS_FFN_DENSE_MLP_H_
