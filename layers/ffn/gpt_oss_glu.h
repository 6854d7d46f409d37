// The GPT-OSS clamped GLU that sgatlin's paper (arXiv:2606.07414 Sec. 3.1)
// calls "SwiGLU", as its authors' code implements it: [a; b] = W1 z + b1,
// h = min(a,7) sigmoid(1.702 min(a,7)) (clip(b,-7,7)+1), y = W2 h + b2; and
// its coarse top-k mixture (the code's MoE): softmax over all E router
// logits, the top-k experts' outputs weighted without renormalisation.
#ifndef SPARSE_LAYERS_LAYERS_FFN_GPT_OSS_GLU_H_
#define SPARSE_LAYERS_LAYERS_FFN_GPT_OSS_GLU_H_

#include <torch/torch.h>

#include "layers/ffn/feed_forward.h"

namespace sparse_layers::layers {

// The clamped GLU of rows `x` with weights (w1: (2F, D), b1, w2: (D, F), b2).
torch::Tensor ClampedGlu(const torch::Tensor& x, const torch::Tensor& w1,
                         const torch::Tensor& b1, const torch::Tensor& w2,
                         const torch::Tensor& b2, const HookPoint* hidden);

class ClampedGluImpl : public FeedForwardImpl {
 public:
  explicit ClampedGluImpl(const FeedForwardOptions& options);
  torch::Tensor Forward(const torch::Tensor& x,
                        const HookPoint& hidden) override;
  int64_t ForwardFlopsPerToken() const override;
  torch::Tensor w1, b1, w2, b2;

 private:
  FeedForwardOptions options_;
};

class GptOssMoeImpl : public FeedForwardImpl {
 public:
  explicit GptOssMoeImpl(const FeedForwardOptions& options);
  torch::Tensor Forward(const torch::Tensor& x,
                        const HookPoint& hidden) override;
  // The code's count: router plus k experts (3.3).
  int64_t ForwardFlopsPerToken() const override;
  // Every expert computed and masked (reference for tests).
  torch::Tensor ForwardDense(const torch::Tensor& x) const;

  torch::Tensor router;          // (E, D), no bias.
  torch::Tensor w1, b1, w2, b2;  // (E, 2F, D), (E, 2F), (E, D, F), (E, D)

 private:
  FeedForwardOptions options_;
};

}  // namespace sparse_layers::layers

#endif  // SPARSE_LAYERS_LAYERS_FFN_GPT_OSS_GLU_H_
