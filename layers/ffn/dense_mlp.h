// Dense feed-forward layers: the two-matrix MLP with GELU or ReLU
// (W_out act(W_in x)) and the gated SwiGLU of Shazeer 2020
// (W_out (silu(W_gate x) * W_up x)).
#ifndef SPARSE_LAYERS_LAYERS_FFN_DENSE_MLP_H_
#define SPARSE_LAYERS_LAYERS_FFN_DENSE_MLP_H_

#include <torch/torch.h>

#include "layers/ffn/feed_forward.h"

namespace sparse_layers::layers {

enum class Activation { kGelu, kRelu };

class DenseMlpImpl : public FeedForwardImpl {
 public:
  DenseMlpImpl(const FeedForwardOptions& options, Activation activation);
  torch::Tensor Forward(const torch::Tensor& x,
                        const HookPoint& hidden) override;
  int64_t ForwardFlopsPerToken() const override;

  torch::nn::Linear in{nullptr};
  torch::nn::Linear out{nullptr};

 private:
  FeedForwardOptions options_;
  Activation activation_;
};

class SwiGluImpl : public FeedForwardImpl {
 public:
  explicit SwiGluImpl(const FeedForwardOptions& options);
  torch::Tensor Forward(const torch::Tensor& x,
                        const HookPoint& hidden) override;
  int64_t ForwardFlopsPerToken() const override;

  torch::nn::Linear gate{nullptr};
  torch::nn::Linear up{nullptr};
  torch::nn::Linear down{nullptr};

 private:
  FeedForwardOptions options_;
};

}  // namespace sparse_layers::layers

#endif  // SPARSE_LAYERS_LAYERS_FFN_DENSE_MLP_H_
