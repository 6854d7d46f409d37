// A mixture's expert products on the rows each expert received, the rows
// sorted by expert: group g (rows_per_group[g] consecutive rows of x) is
// multiplied by its own matrix weight[g]. Forward and backward are each one
// set of independent BLAS products spread over the threads by FLOPs
// (ops/backend IndependentGemms), so the experts run side by side, each
// product single-threaded, instead of one multi-threaded matmul per expert
// with a split of the rows before and a cat after.
//
// The pieces, and so the bits, do not depend on the thread count; with the
// 64-row alignment each group's product has the bits of one single-threaded
// torch::matmul of its rows (GroupedLinearReference on one thread; ATen's own
// multi-threaded sgemm may cut the rows elsewhere).
// Differentiable once in x and weight.
#ifndef SPARSE_LAYERS_OPS_CORE_GROUPED_LINEAR_H_
#define SPARSE_LAYERS_OPS_CORE_GROUPED_LINEAR_H_

#include <torch/torch.h>

#include <vector>

namespace sparse_layers::layers {

// How each group's matrix is stored.
enum class GroupWeightLayout {
  kOutByIn,  // weight (G, out, in), y_g = x_g W_g^T (a mixture's encoders)
  kInByOut,  // weight (G, in, out), y_g = x_g W_g (a mixture's decoders)
};

// x (R, in) float32 or float64, rows_per_group (G entries >= 0 summing to R)
// -> y (R, out).
torch::Tensor GroupedLinear(const torch::Tensor& x, const torch::Tensor& weight,
                            const std::vector<int64_t>& rows_per_group,
                            GroupWeightLayout layout);

// The same by one torch::matmul per group and a cat: the reference in tests.
torch::Tensor GroupedLinearReference(const torch::Tensor& x,
                                     const torch::Tensor& weight,
                                     const std::vector<int64_t>& rows_per_group,
                                     GroupWeightLayout layout);

}  // namespace sparse_layers::layers

#endif  // SPARSE_LAYERS_OPS_CORE_GROUPED_LINEAR_H_
