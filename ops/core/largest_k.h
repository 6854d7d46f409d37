// The k largest entries of each row, as torch::topk(x, k, -1, largest=true,
// sorted) returns them, bit for bit: a single pass per row on the CPU that
// skips, four at a time, every entry below the current k-th (most of a wide
// row), instead of ATen's partial sort of (value, index) pairs of the whole
// row. Rows where ATen's order among equal values or NaN would decide the
// answer, and inputs this pass does not cover, go to torch::topk itself.
#ifndef SPARSE_LAYERS_OPS_CORE_LARGEST_K_H_
#define SPARSE_LAYERS_OPS_CORE_LARGEST_K_H_

#include <torch/torch.h>

#include <tuple>

namespace sparse_layers::layers {

// (values, indices), each (..., k). Covered: float on the CPU, k <= 32, and an
// order ATen fixes: sorted, or a row at least 64 k long (ATen then partially
// sorts, so its unsorted answer is sorted too). `aten_rows`, when given,
// receives how many rows went to torch::topk (all of them when not covered).
// The values carry no gradient (every caller selects under NoGradGuard and
// gathers the kept values itself).
std::tuple<torch::Tensor, torch::Tensor> LargestK(const torch::Tensor& x,
                                                  int64_t k, bool sorted,
                                                  int64_t* aten_rows = nullptr);

}  // namespace sparse_layers::layers

#endif  // SPARSE_LAYERS_OPS_CORE_LARGEST_K_H_
