// Mixture of Hidden Dimensions (MoHD; arXiv:2412.05644 Sec. 4): per token,
// each attention / FFN module reads and writes only K of N contiguous
// sub-blocks of the hidden width D (the first S always shared), weights them
// by alpha * softmax router scores on both sides, and a Kronecker group fusion
// F = m (x) I_{d_e} refills the inactive blocks. Inner widths (q, kv, d_ff)
// stay the dense model's; compression lowers K*d_e below D, expansion widens D.
#ifndef SPARSE_LAYERS_LAYERS_MOHD_MOHD_H_
#define SPARSE_LAYERS_LAYERS_MOHD_MOHD_H_

#include <torch/torch.h>

#include <string>

#include "layers/attention/attention.h"
#include "layers/ffn/feed_forward.h"
#include "ops/core/rotary.h"

namespace sparse_layers::layers {

struct MohdOptions {
  int64_t d_model = 0;   // D.
  int64_t sub_dims = 0;  // N; d_e = D / N.
  int64_t top_k = 0;     // K, shared included.
  int64_t shared = 0;    // S, always active.
  // Activation scaling alpha (arXiv:2412.05644 Sec. 4.2, whose formula is
  // garbled): RENORM = K / sum_A s (default, our reading), CONST_N = N,
  // LITERAL = N sum_A s (as typed), NONE = 1 (the "w.o. scaling" ablation).
  config::LayerOptions::MohdScaling scaling = config::LayerOptions::RENORM;
  // Group fusion: kron (m (x) I, m = I at init) or none (ablation).
  bool fusion = true;
  // Route randomly instead of by the router (the random-routing ablation).
  bool random_routing = false;
  double balance_weight = 0.01;  // beta of Eq. 13 (no value in the paper).
};

// The per-token routing of one module.
struct MohdRouting {
  torch::Tensor weights;  // (T, N): alpha * s on the active set, 0 elsewhere.
  torch::Tensor mask;     // (T, N): 1 on the active set.
  torch::Tensor balance;  // Scalar load-balance loss (undefined when k_sp = 0).
};

// Router Phi (D x N), the scaling and the fusion matrix m of one module.
class MohdGateImpl : public torch::nn::Module {
 public:
  explicit MohdGateImpl(const MohdOptions& options);
  MohdRouting Route(const torch::Tensor& x);  // x: (T, D)
  // Per-dimension weights (T, D) from per-sub-dim ones (T, N).
  torch::Tensor Expand(const torch::Tensor& per_sub_dim) const;
  // out[t, i*d_e:(i+1)*d_e] = sum_j m[i, j] y[t, j*d_e:(j+1)*d_e].
  torch::Tensor Fuse(const torch::Tensor& y) const;

  const MohdOptions& options() const { return options_; }
  torch::Tensor router;  // Phi (D, N)
  torch::Tensor fusion;  // m (N, N)

 private:
  MohdOptions options_;
};
TORCH_MODULE(MohdGate);

// SwiGLU FFN on the routed hidden sub-dims (masked-dense computation: the
// same maths as gathering the active rows; inactive rows get zero gradient).
class MohdFfnImpl : public FeedForwardImpl {
 public:
  MohdFfnImpl(const MohdOptions& options, int64_t d_ff, int64_t n_layers);
  torch::Tensor Forward(const torch::Tensor& x,
                        const HookPoint& hidden) override;
  // The same output computed from the active blocks only: one dense matmul
  // over the shared blocks, then per routed sub-dim the tokens that chose it.
  // Used when `gather_sparse` is set.
  torch::Tensor ForwardGatherSparse(const torch::Tensor& x);
  bool gather_sparse = false;
  int64_t ForwardFlopsPerToken() const override;
  torch::Tensor AuxiliaryLoss() override { return balance_; }

  MohdGate gate{nullptr};
  torch::Tensor w_gate, w_up;  // (D, d_ff)
  torch::Tensor w_down;        // (d_ff, D)

 private:
  MohdOptions options_;
  int64_t d_ff_;
  torch::Tensor balance_;
};

// Causal attention (inner width q, heads of q / n_heads, rotary) on the routed
// hidden sub-dims.
// Registered as attention "mohd".
class MohdAttentionImpl : public AttentionImpl {
 public:
  MohdAttentionImpl(const MohdOptions& options, int64_t inner, int64_t n_heads,
                    int64_t context_length, int64_t n_layers);
  torch::Tensor forward(const torch::Tensor& x) override;  // (B, T, D)
  // The balance loss of the last forward (arXiv:2412.05644 Eq. 13).
  torch::Tensor AuxiliaryLoss() override { return balance_; }
  int64_t ForwardFlopsPerToken(int64_t sequence_length) const override;
  // Project through the active input rows / output columns only, as the FFN's
  // ForwardGatherSparse (same outputs and gradients as masked-dense).
  bool gather_sparse = false;

  MohdGate gate{nullptr};
  torch::Tensor w_q, w_k, w_v;  // (D, q)
  torch::Tensor w_o;            // (q, D)

 private:
  MohdOptions options_;
  int64_t inner_, heads_;
  RotaryEmbedding rotary_;
  torch::Tensor balance_;
};
TORCH_MODULE(MohdAttention);

// N sub-dims, K active, and the config's MoHD variants (S = K - 1 by default).
MohdOptions MohdOptionsFor(int64_t d_model, int64_t sub_dims, int64_t active,
                           const LayerVariants& variants);

// Parameter counts as the paper reports them (arXiv:2412.05644 Tables 1, 2,
// 5): LLaMA-2 layers with q, kv, d_ff fixed; embeddings and untied head in the
// total only; norms, routers and fusion excluded.
int64_t MohdLayerParameters(int64_t width, int64_t q, int64_t kv, int64_t d_ff);
int64_t MohdActivatedParameters(int64_t layers, int64_t attention_width,
                                int64_t ffn_width, int64_t q, int64_t kv,
                                int64_t d_ff);
int64_t MohdTotalParameters(int64_t layers, int64_t d_model, int64_t q,
                            int64_t kv, int64_t d_ff, int64_t vocab);

}  // namespace sparse_layers::layers

#endif  // SPARSE_LAYERS_LAYERS_MOHD_MOHD_H_
