// Unembedding fused with the mean next-token cross-entropy, a chunk of tokens
// at a time, so that neither the (N, V) logits nor their gradient is ever
// materialised (at N = 4096 tokens per step and V = 8192 each is 128 MB of
// float; the chunked form holds one (C, V) block, C = chunk_tokens).
//
// Shapes: h (N, d) hidden states, W (V, d) unembedding, t (N) targets in
// [0, V). For a chunk of C rows [s, s + C):
//   z   = h_c W^T                   (C, V) logits, transient
//   m_i = max_v z_iv                (C) subtracted so exp never overflows
//   S_i = sum_v exp(z_iv - m_i)     (C)
//   l_i = log S_i - (z_{i,t_i} - m_i)   (C) per-token loss, = lse_i - z_{i,t_i}
// L = (1/N) sum_i l_i, one sum over an (N) buffer at the end, so its value
// does not depend on the chunking order of a running total.
// When a backward can follow, the same chunk's logits also give the gradients
// (for dL_out = 1; the backward only scales them), as Liger's fused linear
// cross-entropy does:
//   dz   = (exp(z - m) / S - onehot(t)) / N
//   dh_c = dz W    (C, d), written to its rows of dh
//   dW  += dz^T h_c (V, d), accumulated chunk after chunk
// So forward and backward together cost the unfused form's three matmuls,
// and the peak extra memory is C x V beside the gradients themselves.
//
// Deterministic: chunks run in a fixed order, dW is accumulated by addmm in
// that order (no atomics, no cross-thread scatter), and every reduction is a
// LibTorch op whose order depends only on the shapes and the thread count;
// repeated runs at a given thread count give bit-identical values and
// gradients. Differentiable once (in h and W), not twice. There is no bias
// (GptImpl's unembedding has none) and no ignore index (every target counts).
#ifndef SPARSE_LAYERS_OPS_CORE_FUSED_CROSS_ENTROPY_H_
#define SPARSE_LAYERS_OPS_CORE_FUSED_CROSS_ENTROPY_H_

#include <torch/torch.h>

namespace sparse_layers::layers {

// mean_i [logsumexp(h_i W^T) - h_i . W_{t_i}]: hidden (..., d), weight (V, d),
// targets (...) int64 in [0, V) -> a scalar, the same value as
// cross_entropy(hidden W^T, targets) without the (..., V) logits. Leading
// dimensions are flattened to N tokens; chunk_tokens >= 1 (>= N: one chunk).
torch::Tensor FusedCrossEntropy(const torch::Tensor& hidden,
                                const torch::Tensor& weight,
                                const torch::Tensor& targets,
                                int64_t chunk_tokens = 1024);

// The unfused reference: the full logits, then cross_entropy (what
// GptImpl::CrossEntropy computes today).
torch::Tensor UnfusedCrossEntropy(const torch::Tensor& hidden,
                                  const torch::Tensor& weight,
                                  const torch::Tensor& targets);

}  // namespace sparse_layers::layers

#endif  // SPARSE_LAYERS_OPS_CORE_FUSED_CROSS_ENTROPY_H_
