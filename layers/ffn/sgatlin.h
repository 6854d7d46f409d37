// Sparsely gated tiny linear experts (Schug 2026, arXiv:2606.07414 Sec. 2) and
// the PEER baseline (He 2024, as the sgatlin authors' code implements it):
// per-token product-key top-k over n^2 rank-1 "neurons" w_out w_in^T, in C
// channels.
//   sgatlin: q = W_query z shared by the channels, s_c = W_key_c q, gates are
//   the raw summed product-key scores, no nonlinearity (Eqs. 1-2, App. A.1).
#ifndef SPARSE_LAYERS_LAYERS_FFN_SGATLIN_H_
#define SPARSE_LAYERS_LAYERS_FFN_SGATLIN_H_

#include <torch/torch.h>

#include "layers/ffn/feed_forward.h"
#include "layers/ffn/product_key_topk.h"

namespace sparse_layers::layers {

struct ProductKeyOptions {
  int64_t d_model = 0;
  int64_t d_ffn =
      0;  // Neurons per channel (sgatlin) or shared pool (PEER), n^2.
  int64_t channels = 0;  // C.
  int64_t top_k = 8;
  int64_t d_key = 128;
  enum class Router {
    kProductDense,
    kProductKeyValue
  } router = Router::kProductDense;
  // Applied to g * (w_in . z) (sgatlin ablations, Table 1); kIdentity is
  // sgatlin.
  enum class Activation {
    kIdentity,
    kRelu,
    kGelu,
    kSwish
  } activation = Activation::kIdentity;
  // PEER: experts shared across channels, softmax over the k gates, gelu(u.z).
  bool peer = false;
  std::string hook_prefix;  // FeedForwardOptions::hook_prefix.
};

// PEER's router scores (He 2024): for each half p and channel c the query head
// q = W^Q_{p,c} z and s = q . K_{p,c} / sqrt(2 d_key). z (N, d), query (2, C,
// d, d_key), keys (2, C, n, d_key); s (N, 2, C, n), a strided view on the CPU.
torch::Tensor PeerRouterScores(const torch::Tensor& z,
                               const torch::Tensor& query,
                               const torch::Tensor& keys);

// The same by two einsums: PeerRouterScores's reference in tests.
torch::Tensor PeerRouterScoresReference(const torch::Tensor& z,
                                        const torch::Tensor& query,
                                        const torch::Tensor& keys);

class ProductKeyFfnImpl : public FeedForwardImpl {
 public:
  explicit ProductKeyFfnImpl(const ProductKeyOptions& options);
  torch::Tensor Forward(const torch::Tensor& x,
                        const HookPoint& hidden) override;
  // Router and expert FLOPs as the paper's code counts them
  // (hyperlinear/training/flops.py): top-k, gathers and elementwise work
  // excluded.
  int64_t ForwardFlopsPerToken() const override;

  // Gates and neuron indices per token and channel: (N, C, k) each.
  ProductTopK Route(const torch::Tensor& z) const;
  std::vector<HookPoint*> HookPoints() override {
    return {&hook_router_scores, &hook_router_indices};
  }

  // Each forward's routing, tokens flattened, (N, C, k): captured for
  // analysis, or one prompt's patched into another (arXiv:2606.07414
  // Sec. 4.3, Fig. 7). Named <hook_prefix>hook_router_{scores,indices}.
  HookPoint hook_router_scores;
  HookPoint hook_router_indices;

  const ProductKeyOptions& options() const { return options_; }
  torch::Tensor query;  // sgatlin: W_query (d_key, D); PEER: (2, C, D, d_key)
  torch::Tensor
      keys;  // sgatlin: W_key (2 * C * n, d_key); PEER: (2, C, n, d_key)
  torch::Tensor experts_in;  // (C * d_ffn, D) or PEER's shared (d_ffn, D)
  torch::Tensor experts_out;

 private:
  ProductKeyOptions options_;
  int64_t n_ = 0;  // sqrt(d_ffn)
};

}  // namespace sparse_layers::layers

#endif  // SPARSE_LAYERS_LAYERS_FFN_SGATLIN_H_
