// Top-k selection and sparse decoding shared by every sparse layer. Selection
// carries no gradient (only the kept values do), and decoding touches only the
// k selected rows: cost grows with k, not with the number of units.
#ifndef SPARSE_LAYERS_OPS_CORE_TOPK_H_
#define SPARSE_LAYERS_OPS_CORE_TOPK_H_

#include <torch/torch.h>

namespace sparse_layers::layers {

struct TopKCodes {
  torch::Tensor values;   // (B, k), differentiable.
  torch::Tensor indices;  // (B, k) int64, no gradient.
};

// TopK(ReLU(pre), k) per row (MxD Eq. 2): the k largest entries after the
// ReLU, so fewer than k may be non-zero.
TopKCodes ReluTopK(const torch::Tensor& pre, int64_t k);

// The dense (B, width) code with the kept values added in, zeros elsewhere (a
// unit listed twice gets the sum: padding repeats units at value 0).
torch::Tensor Densify(const TopKCodes& codes, int64_t width);

// sum_j values[b, j] * rows[indices[b, j]]: (..., k) x (width, O) -> (..., O),
// gathering k rows per token, never all of them. On CPU a fused kernel whose
// backward writes each row's gradient once, from the tokens that selected it
// (no zero-filled (width, O) buffer, no sort); differentiable once.
torch::Tensor SparseDecode(const TopKCodes& codes, const torch::Tensor& rows);

// The same through embedding_bag with per-sample weights: SparseDecode's
// reference in tests, and its path on other devices.
torch::Tensor SparseDecodeReference(const TopKCodes& codes,
                                    const torch::Tensor& rows);

// rows[indices[b, j]] . x[b]: (B, I) x (width, I) x (B, k) -> (B, k), the
// transpose of SparseDecode (a per-token gathered encoder, sgatlin Eq. 1). On
// CPU a fused kernel that never materialises the (B, k, I) gathered rows and
// walks the rows once each (their selecting tokens listed by a counting sort,
// in token order, so repeats are bit-identical); differentiable once (x,
// rows), not twice.
torch::Tensor SparseDot(const torch::Tensor& x, const torch::Tensor& rows,
                        const torch::Tensor& indices);

// The same by index_select, multiply and sum: SparseDot's reference, and its
// path on other devices.
torch::Tensor SparseDotReference(const torch::Tensor& x,
                                 const torch::Tensor& rows,
                                 const torch::Tensor& indices);

}  // namespace sparse_layers::layers

#endif  // SPARSE_LAYERS_OPS_CORE_TOPK_H_
