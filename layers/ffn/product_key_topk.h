// Product-key top-k (Lample et al. 2019, used by sgatlin, arXiv:2606.07414
// Sec. 2, and PEER): the k best of the n^2 sums s1_i + s2_j, found from the k
// best of each half and the k^2 sums of those.
#ifndef SPARSE_LAYERS_LAYERS_FFN_PRODUCT_KEY_TOPK_H_
#define SPARSE_LAYERS_LAYERS_FFN_PRODUCT_KEY_TOPK_H_

#include <torch/torch.h>

namespace sparse_layers::layers {

// (scores, indices): the top-k of the n^2 sums s1_i + s2_j, indices i * n + j.
struct ProductTopK {
  torch::Tensor scores;   // (..., k), best first
  torch::Tensor indices;  // (..., k)
};

// halves: (N, 2, C, n), s1 = halves[:, 0], s2 = halves[:, 1] (the routers'
// layout); results (N, C, k). One pass per (token, channel) row on the CPU
// (partial sorts of n and of k^2 entries, no candidate tensors); its gradient
// reaches the two chosen half-scores of each result.
ProductTopK ProductKeyTopKOfHalves(const torch::Tensor& halves, int64_t k);

// The same with ATen ops (topk of each half, the k^2 candidate sums, topk of
// those), s1 and s2 (..., n): ProductKeyTopKOfHalves's reference in tests,
// and its path off the CPU.
ProductTopK ProductKeyTopKReference(const torch::Tensor& s1,
                                    const torch::Tensor& s2, int64_t k);

}  // namespace sparse_layers::layers

#endif  // SPARSE_LAYERS_LAYERS_FFN_PRODUCT_KEY_TOPK_H_
