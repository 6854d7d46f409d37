// Causal softmax attention a block of queries at a time, skipping the masked
// half of the T x T scores (Vaswani et al. 2017, arXiv:1706.03762, eq. 1, with
// the decoder's causal mask).
//
// Shapes: q, k (..., T, Dh), v (..., T, Dv); the output has v's shape (Dv may
// differ from Dh: Lorsa's QK groups mix values G wide, arXiv:2504.20938
// Sec. 3.1). For a block of R
// query rows [s, s + R), only keys [0, s + R) can be attended to, so
//   S_b = q_b k_{<s+R}^T / sqrt(Dh)      (..., R, s + R)
//   P_b = softmax(S_b + M_b)             M_b: -inf above the diagonal of the
//                                        last R x R sub-block, 0 elsewhere
//   o_b = P_b v_{<s+R}
// which is exactly softmax(q k^T / sqrt(Dh) + causal mask) v, row for row. The
// blocks hold sum_b R (s + R) scores instead of T^2: at T = 256 and R = 64,
// 10/16 of them. When a gradient is needed (GradMode on and an input requires
// grad) the forward keeps each P_b for the backward (the only copy of the
// pattern; no masked or unnormalised copy is kept); otherwise it holds one
// block's at a time. The backward is
// the softmax gradient block by block:
//   dv_{<s+R} += P_b^T do_b
//   dP_b = do_b v_{<s+R}^T
//   dS_b = P_b * (dP_b - rowsum(P_b * dP_b)) / sqrt(Dh)
//   dq_b = dS_b k_{<s+R},   dk_{<s+R} += dS_b^T q_b
// Every product is one sgemm per (batch, head) entry on the views' strides
// (ops/backend/batched_gemm.h), not ATen's per-entry select + addmm_ loop.
// Deterministic: blocks run in a fixed order and dk, dv are accumulated once
// per block in that order, so repeated runs at a given thread count give
// bit-identical values and gradients. Differentiable once.
#ifndef SPARSE_LAYERS_OPS_CORE_BLOCK_CAUSAL_ATTENTION_H_
#define SPARSE_LAYERS_OPS_CORE_BLOCK_CAUSAL_ATTENTION_H_

#include <torch/torch.h>

namespace sparse_layers::layers {

// softmax(q k^T / sqrt(Dh) + causal mask) v without the masked half; q, k
// (..., T, Dh) of one shape, v (..., T, Dv); block_tokens >= 1 (>= T: one
// block, the full square).
torch::Tensor BlockCausalAttention(const torch::Tensor& q,
                                   const torch::Tensor& k,
                                   const torch::Tensor& v,
                                   int64_t block_tokens = 64);

// The reference: the full (..., T, T) scores, the additive mask, softmax, v.
torch::Tensor DenseCausalAttention(const torch::Tensor& q,
                                   const torch::Tensor& k,
                                   const torch::Tensor& v);

}  // namespace sparse_layers::layers

#endif  // SPARSE_LAYERS_OPS_CORE_BLOCK_CAUSAL_ATTENTION_H_
