#include "layers/ffn/product_key_topk.h"

#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <vector>

namespace sparse_layers::layers {
namespace {

// The k largest of v[0, n) into best (positions, largest first) by insertion
// into a sorted buffer: for k << n most values fail one comparison. Among
// equal values the earlier position ranks first.
template <typename T>
void TopKPositions(const T* v, int64_t n, int64_t k, int64_t* best) {
  int64_t size = 0;
  for (int64_t i = 0; i < n; ++i) {
    const T x = v[i];
    if (size == k && !(x > v[best[k - 1]])) continue;
    int64_t p = size < k ? size++ : k - 1;
    for (; p > 0 && x > v[best[p - 1]]; --p) best[p] = best[p - 1];
    best[p] = i;
  }
}

struct HalvesLayout {
  int64_t tokens, channels, n, k;
  int64_t token_stride, half_stride, channel_stride;  // Of halves, in elements.
};

// Per (token, channel) row: the k best of each half, then the k best of their
// k^2 sums; writes scores, i * n + j, and i and j (for the gradient).
template <typename T>
void ForwardKernel(const T* halves, const HalvesLayout& l, T* scores,
                   int64_t* indices, int64_t* first, int64_t* second) {
  at::parallel_for(
      0, l.tokens * l.channels, 64, [&](int64_t begin, int64_t end) {
        std::vector<int64_t> best1(l.k), best2(l.k), pair_a(l.k), pair_b(l.k);
        std::vector<T> sums(l.k);
        for (int64_t row = begin; row < end; ++row) {
          const int64_t t = row / l.channels, c = row % l.channels;
          const T* s1 = halves + t * l.token_stride + c * l.channel_stride;
          const T* s2 = s1 + l.half_stride;
          TopKPositions(s1, l.n, l.k, best1.data());
          TopKPositions(s2, l.n, l.k, best2.data());
          // The k best of the k^2 sums, a-major as the reference flattens
          // them; both lists fall, so a row stops at its first sum that
          // cannot enter, and the search when a row's first cannot.
          int64_t size = 0;
          for (int64_t a = 0; a < l.k; ++a) {
            const T v1 = s1[best1[a]];
            int64_t b = 0;
            for (; b < l.k; ++b) {
              const T x = v1 + s2[best2[b]];
              if (size == l.k && !(x > sums[l.k - 1])) break;
              int64_t p = size < l.k ? size++ : l.k - 1;
              for (; p > 0 && x > sums[p - 1]; --p) {
                sums[p] = sums[p - 1];
                pair_a[p] = pair_a[p - 1];
                pair_b[p] = pair_b[p - 1];
              }
              sums[p] = x;
              pair_a[p] = a;
              pair_b[p] = b;
            }
            if (b == 0) break;
          }
          for (int64_t o = 0; o < l.k; ++o) {
            const int64_t i = best1[pair_a[o]], j = best2[pair_b[o]];
            scores[row * l.k + o] = sums[o];
            indices[row * l.k + o] = i * l.n + j;
            first[row * l.k + o] = i;
            second[row * l.k + o] = j;
          }
        }
      });
}

// grad_halves[t, 0, c, :] and [t, 1, c, :] zeroed, then [.., i] and [.., j]
// += grad of each result, in the halves' own layout; rows are disjoint, so
// threads never write the same element.
template <typename T>
void BackwardKernel(const T* grad, const int64_t* first, const int64_t* second,
                    const HalvesLayout& l, T* grad_halves) {
  at::parallel_for(
      0, l.tokens * l.channels, 64, [&](int64_t begin, int64_t end) {
        for (int64_t row = begin; row < end; ++row) {
          const int64_t t = row / l.channels, c = row % l.channels;
          T* g1 = grad_halves + t * l.token_stride + c * l.channel_stride;
          T* g2 = g1 + l.half_stride;
          std::fill(g1, g1 + l.n, T(0));
          std::fill(g2, g2 + l.n, T(0));
          for (int64_t o = 0; o < l.k; ++o) {
            g1[first[row * l.k + o]] += grad[row * l.k + o];
            g2[second[row * l.k + o]] += grad[row * l.k + o];
          }
        }
      });
}

class ProductKeyTopKFunction
    : public torch::autograd::Function<ProductKeyTopKFunction> {
 public:
  // Returns (scores, indices); indices carry no gradient.
  static torch::autograd::variable_list forward(
      torch::autograd::AutogradContext* ctx, const torch::Tensor& halves,
      int64_t k) {
    const HalvesLayout layout{
        halves.size(0),   halves.size(2),   halves.size(3),  k,
        halves.stride(0), halves.stride(1), halves.stride(2)};
    const auto long_options = halves.options().dtype(torch::kLong);
    const std::vector<int64_t> shape = {layout.tokens, layout.channels, k};
    torch::Tensor scores = torch::empty(shape, halves.options());
    torch::Tensor indices = torch::empty(shape, long_options);
    torch::Tensor first = torch::empty(shape, long_options);
    torch::Tensor second = torch::empty(shape, long_options);
    AT_DISPATCH_FLOATING_TYPES(halves.scalar_type(), "ProductKeyTopK", [&] {
      ForwardKernel<scalar_t>(
          halves.data_ptr<scalar_t>(), layout, scores.data_ptr<scalar_t>(),
          indices.data_ptr<int64_t>(), first.data_ptr<int64_t>(),
          second.data_ptr<int64_t>());
    });
    ctx->save_for_backward({first, second});
    // The gradient is written in the input's layout, so that a router's
    // permuted view (PEER's) passes it back without a copy.
    ctx->saved_data["sizes"] = halves.sizes().vec();
    ctx->saved_data["strides"] = halves.strides().vec();
    ctx->mark_non_differentiable({indices});
    return {scores, indices};
  }

  static torch::autograd::variable_list backward(
      torch::autograd::AutogradContext* ctx,
      torch::autograd::variable_list grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    const std::vector<int64_t> sizes = ctx->saved_data["sizes"].toIntVector(),
                               strides =
                                   ctx->saved_data["strides"].toIntVector();
    const torch::Tensor grad = grad_outputs[0].contiguous();
    const HalvesLayout layout{sizes[0],          sizes[2],   sizes[3],
                              saved[0].size(-1), strides[0], strides[1],
                              strides[2]};
    torch::Tensor grad_halves =
        torch::empty_strided(sizes, strides, grad.options());
    AT_DISPATCH_FLOATING_TYPES(
        grad.scalar_type(), "ProductKeyTopKBackward", [&] {
          BackwardKernel<scalar_t>(grad.data_ptr<scalar_t>(),
                                   saved[0].data_ptr<int64_t>(),
                                   saved[1].data_ptr<int64_t>(), layout,
                                   grad_halves.data_ptr<scalar_t>());
        });
    return {grad_halves, torch::Tensor()};
  }
};

}  // namespace

ProductTopK ProductKeyTopKOfHalves(const torch::Tensor& halves, int64_t k) {
  TORCH_CHECK(halves.dim() == 4 && halves.size(1) == 2,
              "ProductKeyTopKOfHalves: halves (N, 2, C, n)");
  TORCH_CHECK(k > 0 && k <= halves.size(3),
              "product-key top-k needs 0 < k <= n");
  if (!halves.device().is_cpu()) {
    return ProductKeyTopKReference(halves.select(1, 0), halves.select(1, 1), k);
  }
  const torch::Tensor rows =
      halves.stride(3) == 1 && halves.is_non_overlapping_and_dense()
          ? halves
          : halves.contiguous();
  const auto results = ProductKeyTopKFunction::apply(rows, k);
  return {results[0], results[1]};
}

ProductTopK ProductKeyTopKReference(const torch::Tensor& s1,
                                    const torch::Tensor& s2, int64_t k) {
  const int64_t n = s1.size(-1);
  torch::Tensor i1, i2, r;
  {
    torch::NoGradGuard no_grad;
    i1 = std::get<1>(s1.topk(k, -1));
    i2 = std::get<1>(s2.topk(k, -1));
  }
  const torch::Tensor v1 = s1.gather(-1, i1);
  const torch::Tensor v2 = s2.gather(-1, i2);
  auto shape = v1.sizes().vec();
  shape.back() = k * k;
  const torch::Tensor candidates =
      (v1.unsqueeze(-1) + v2.unsqueeze(-2)).reshape(shape);
  const torch::Tensor candidate_ids =
      (i1.unsqueeze(-1) * n + i2.unsqueeze(-2)).reshape(shape);
  {
    torch::NoGradGuard no_grad;
    r = std::get<1>(candidates.topk(k, -1));
  }
  return {candidates.gather(-1, r), candidate_ids.gather(-1, r)};
}

}  // namespace sparse_layers::layers
