#include "layers/ffn/product_key_topk.h"

#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <ATen/record_function.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>
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

// Eight (score, tag) pairs best first, in two SSE registers of four lanes (the
// baseline ISA). Float rows with k = 8 (every cpu-scale product-key layer) are
// ranked here without branches on the data: the scalar paths above and below
// mispredict about once per inserted entry, which was most of a layer's top-k.
typedef float Lanes __attribute__((vector_size(16)));
typedef int32_t Tags __attribute__((vector_size(16)));

struct Best8 {
  Lanes v0, v1;  // Ranks 0-3 and 4-7.
  Tags t0, t1;
};

// Lane-wise "a before b": the higher score, or on equal scores the lower tag
// (the earlier position or pair), the order of the scalar paths.
inline Tags Before(Lanes av, Tags at, Lanes bv, Tags bt) {
  return (av > bv) | ((av == bv) & (at < bt));
}

// [before[3], v[0], v[1], v[2]]: v moved down one rank, the rank above it
// entering from `before`. Two byte shifts and an or (SSE2), not the unpack
// chains a two-register __builtin_shuffle becomes.
inline Tags DownOneRank(Tags before, Tags v) {
  const Tags zero = {0, 0, 0, 0};
  return __builtin_shuffle(zero, v, Tags{0, 4, 5, 6}) |
         __builtin_shuffle(before, zero, Tags{3, 4, 4, 4});
}

inline Lanes DownOneRank(Lanes before, Lanes v) {
  return reinterpret_cast<Lanes>(
      DownOneRank(reinterpret_cast<Tags>(before), reinterpret_cast<Tags>(v)));
}

// Lane-wise m ? a : b for masks of all ones or zeros, by and / andnot / or
// (the vector ?: would compare m with zero again first).
inline Tags Select(Tags m, Tags a, Tags b) { return (m & a) | (~m & b); }

inline Lanes Select(Tags m, Lanes a, Lanes b) {
  return reinterpret_cast<Lanes>(
      Select(m, reinterpret_cast<Tags>(a), reinterpret_cast<Tags>(b)));
}

// Inserts x, tagged later than every entry, by one compare per rank: x takes
// the first rank it beats and the ranks below shift down one.
inline void Insert(Best8& b, float x, int32_t tag) {
  const Lanes xs = {x, x, x, x};
  const Tags ts = {tag, tag, tag, tag};
  const Tags zero = {0, 0, 0, 0};
  const Lanes none = {0, 0, 0, 0};
  const Tags g0 = xs > b.v0, g1 = xs > b.v1;  // Monotone over ranks.
  const Tags above0 = DownOneRank(zero, g0), above1 = DownOneRank(g0, g1);
  const Lanes up0 = DownOneRank(none, b.v0), up1 = DownOneRank(b.v0, b.v1);
  const Tags tup0 = DownOneRank(zero, b.t0), tup1 = DownOneRank(b.t0, b.t1);
  b.v0 = Select(g0, Select(above0, up0, xs), b.v0);
  b.v1 = Select(g1, Select(above1, up1, xs), b.v1);
  b.t0 = Select(g0, Select(above0, tup0, ts), b.t0);
  b.t1 = Select(g1, Select(above1, tup1, ts), b.t1);
}

// One bitonic step inside each register: lanes paired by `partner`, the lane
// in `second` of each pair keeps the later entry.
inline void SortStep(Lanes& v, Tags& t, Tags partner, Tags second) {
  const Lanes pv = __builtin_shuffle(v, partner);
  const Tags pt = __builtin_shuffle(t, partner);
  const Tags keep = Before(v, t, pv, pt) ^ second;
  v = Select(keep, v, pv);
  t = Select(keep, t, pt);
}

// b becomes the best 8 of b and r (both best first): a bitonic merge
// (Batcher), exact for any total order.
inline void Merge(Best8& b, Lanes r0, Lanes r1, Tags rt0, Tags rt1) {
  const Tags reverse = {3, 2, 1, 0};
  const Lanes w0 = __builtin_shuffle(r1, reverse),
              w1 = __builtin_shuffle(r0, reverse);
  const Tags wt0 = __builtin_shuffle(rt1, reverse),
             wt1 = __builtin_shuffle(rt0, reverse);
  const Tags k0 = Before(b.v0, b.t0, w0, wt0), k1 = Before(b.v1, b.t1, w1, wt1);
  // A bitonic sequence holding the best 8.
  const Lanes c0 = Select(k0, b.v0, w0), c1 = Select(k1, b.v1, w1);
  const Tags ct0 = Select(k0, b.t0, wt0), ct1 = Select(k1, b.t1, wt1);
  const Tags first = Before(c0, ct0, c1, ct1);
  b.v0 = Select(first, c0, c1);
  b.v1 = Select(first, c1, c0);
  b.t0 = Select(first, ct0, ct1);
  b.t1 = Select(first, ct1, ct0);
  const Tags pairs2 = {2, 3, 0, 1}, second2 = {0, 0, -1, -1};
  const Tags pairs1 = {1, 0, 3, 2}, second1 = {0, -1, 0, -1};
  SortStep(b.v0, b.t0, pairs2, second2);
  SortStep(b.v1, b.t1, pairs2, second2);
  SortStep(b.v0, b.t0, pairs1, second1);
  SortStep(b.v1, b.t1, pairs1, second1);
}

// The 8 best of v[0, n) as TopKPositions ranks them, in two interleaved
// chains (even and odd positions) so that one insert's latency overlaps the
// other's, then merged. Chains start from (-inf, kNoPosition) fillers; a row
// that keeps one (fewer than 8 scores above -inf) goes to TopKPositions.
constexpr int32_t kNoPosition = INT32_MAX;

inline void Top8Positions(const float* v, int64_t n, int64_t* best) {
  constexpr float kLow = -std::numeric_limits<float>::infinity();
  const Lanes low = {kLow, kLow, kLow, kLow};
  const Tags none = {kNoPosition, kNoPosition, kNoPosition, kNoPosition};
  Best8 even{low, low, none, none}, odd{low, low, none, none};
  int64_t i = 0;
  for (; i + 1 < n; i += 2) {
    Insert(even, v[i], static_cast<int32_t>(i));
    Insert(odd, v[i + 1], static_cast<int32_t>(i + 1));
  }
  if (i < n) Insert(even, v[i], static_cast<int32_t>(i));
  Merge(even, odd.v0, odd.v1, odd.t0, odd.t1);
  if (even.t1[3] == kNoPosition) {
    TopKPositions(v, n, 8, best);
    return;
  }
  for (int r = 0; r < 4; ++r) {
    best[r] = even.t0[r];
    best[r + 4] = even.t1[r];
  }
}

// The 8 best of the 64 sums v1[a] + v2[b] (both best first), tagged a * 8 + b
// (the scalar path's a-major order); a row whose best sum cannot enter ends
// the search, as in the scalar path.
inline Best8 Top8Sums(const float* v1, const float* v2) {
  const Lanes b0 = {v2[0], v2[1], v2[2], v2[3]};
  const Lanes b1 = {v2[4], v2[5], v2[6], v2[7]};
  const Tags low = {0, 1, 2, 3}, high = {4, 5, 6, 7};
  Best8 best{v1[0] + b0, v1[0] + b1, low, high};
  for (int32_t a = 1; a < 8; ++a) {
    const Lanes r0 = v1[a] + b0, r1 = v1[a] + b1;
    if (!(r0[0] > best.v1[3])) break;
    Merge(best, r0, r1, low + 8 * a, high + 8 * a);
  }
  return best;
}

// One (token, channel) row of ForwardKernel by the branch-free ranking.
inline void Top8Row(const float* s1, const float* s2, int64_t n, int64_t* best1,
                    int64_t* best2, int64_t row, float* scores,
                    int64_t* indices, int64_t* first, int64_t* second) {
  Top8Positions(s1, n, best1);
  Top8Positions(s2, n, best2);
  float v1[8], v2[8];
  for (int r = 0; r < 8; ++r) {
    v1[r] = s1[best1[r]];
    v2[r] = s2[best2[r]];
  }
  const Best8 sums = Top8Sums(v1, v2);
  for (int o = 0; o < 8; ++o) {
    const int32_t tag = o < 4 ? sums.t0[o] : sums.t1[o - 4];
    const int64_t i = best1[tag / 8], j = best2[tag % 8];
    scores[row * 8 + o] = o < 4 ? sums.v0[o] : sums.v1[o - 4];
    indices[row * 8 + o] = i * n + j;
    first[row * 8 + o] = i;
    second[row * 8 + o] = j;
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
          if constexpr (std::is_same_v<T, float>) {
            if (l.k == 8 && l.n >= 8) {
              Top8Row(s1, s2, l.n, best1.data(), best2.data(), row, scores,
                      indices, first, second);
              continue;
            }
          }
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
    // A named range: op profiles see the forward, which is no ATen op.
    RECORD_FUNCTION("ProductKeyTopK", std::vector<c10::IValue>());
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
