#include "layers/ffn/product_key_topk.h"

#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <ATen/record_function.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "ops/core/float_lanes.h"

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

// Float rows with k = 8 (every cpu-scale product-key layer) are ranked below
// without branches on the data, in SSE registers of four lanes (the baseline
// ISA, through ops/core/float_lanes.h): the scalar paths mispredict about
// once per entry that enters the k best, which was most of a layer's top-k
// time.

// [before[3], v[0], v[1], v[2]]: v moved down one rank, the rank above it
// entering from `before`. Two byte shifts and an or (SSE2), not the unpack
// chains a two-register __builtin_shuffle becomes.
inline LaneMasks DownOneRank(LaneMasks before, LaneMasks v) {
  const LaneMasks zero = {0, 0, 0, 0};
  return __builtin_shuffle(zero, v, LaneMasks{0, 4, 5, 6}) |
         __builtin_shuffle(before, zero, LaneMasks{3, 4, 4, 4});
}

inline FloatLanes DownOneRank(FloatLanes before, FloatLanes v) {
  return reinterpret_cast<FloatLanes>(DownOneRank(
      reinterpret_cast<LaneMasks>(before), reinterpret_cast<LaneMasks>(v)));
}

// The 8 largest values of a sorted (falling) buffer after x arrives: rank p
// keeps min(max(x, v[p]), v[p - 1]), i.e. v[p - 1] where x beats it, x where
// x beats only v[p], else v[p]. Values only (equal values are the same
// value), so two maxps, two minps and three shifts, no positions.
inline void InsertValue(FloatLanes& v0, FloatLanes& v1, float x) {
  constexpr float kHigh = std::numeric_limits<float>::infinity();
  const FloatLanes xs = BroadcastLanes(x), high = BroadcastLanes(kHigh);
  const FloatLanes up0 = DownOneRank(high, v0), up1 = DownOneRank(v0, v1);
  v0 = SmallerLanes(up0, LargerLanes(xs, v0));
  v1 = SmallerLanes(up1, LargerLanes(xs, v1));
}

// The 8 largest of v[0, n), n >= 8, falling, as two registers: inserted in
// two interleaved chains (even and odd positions, so that one insert's latency
// overlaps the other's), merged by a bitonic step.
inline void Top8Values(const float* v, int64_t n, FloatLanes top[2]) {
  constexpr float kLow = -std::numeric_limits<float>::infinity();
  const FloatLanes low = BroadcastLanes(kLow);
  FloatLanes e0 = low, e1 = low, o0 = low, o1 = low;
  int64_t i = 0;
  for (; i + 1 < n; i += 2) {
    InsertValue(e0, e1, v[i]);
    InsertValue(o0, o1, v[i + 1]);
  }
  if (i < n) InsertValue(e0, e1, v[i]);
  // The larger of e[r] and o[7 - r] (a bitonic sequence holding the best 8),
  // then sorted by three compare-exchange steps.
  const LaneMasks reverse = {3, 2, 1, 0};
  const FloatLanes c0 = LargerLanes(e0, __builtin_shuffle(o1, reverse)),
                   c1 = LargerLanes(e1, __builtin_shuffle(o0, reverse));
  top[0] = LargerLanes(c0, c1);
  top[1] = SmallerLanes(c0, c1);
  for (int h = 0; h < 2; ++h) {
    FloatLanes& t = top[h];
    const FloatLanes p2 = __builtin_shuffle(t, LaneMasks{2, 3, 0, 1});
    t = SelectLanes((t > p2) ^ LaneMasks{0, 0, -1, -1}, t, p2);
    const FloatLanes p1 = __builtin_shuffle(t, LaneMasks{1, 0, 3, 2});
    t = SelectLanes((t > p1) ^ LaneMasks{0, -1, 0, -1}, t, p1);
  }
}

// The positions of the 8 best of v[0, n) in rank order (score falling, the
// earlier position first among equals), as TopKPositions gives them: their
// values first, then one pass without data branches that takes every value
// above the 8th and the earliest of those equal to it, and ranks each by the
// values above it plus the equal ones before it. False, with best unwritten,
// when v holds a NaN: the scalar path's answer then depends on where it is.
inline bool Top8Positions(const float* v, int64_t n, int64_t* best) {
  FloatLanes top[2];
  Top8Values(v, n, top);
  const float last = top[1][3];
  const FloatLanes lasts = BroadcastLanes(last);
  const LaneMasks equal_lanes = (top[0] == lasts) + (top[1] == lasts);
  int equal_left =
      -(equal_lanes[0] + equal_lanes[1] + equal_lanes[2] + equal_lanes[3]);
  int64_t chosen[9];
  int found = 0;
  bool nan = false;
  for (int64_t p = 0; p < n; ++p) {
    const float x = v[p];
    const int equal = (x == last) & (equal_left > 0);
    equal_left -= equal;
    nan |= x != x;
    chosen[found] = p;  // chosen[8] takes the writes after the 8th.
    found += (x > last) | equal;
  }
  if (nan) return false;
  TORCH_INTERNAL_ASSERT(found == 8,
                        "product-key top-k: the 8 best values were lost");
  int seen[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  for (int c = 0; c < 8; ++c) {
    const float x = v[chosen[c]];
    const FloatLanes xs = BroadcastLanes(x);
    const LaneMasks above =
        (top[0] > xs) + (top[1] > xs);  // -1 per rank above.
    const int rank = -(above[0] + above[1] + above[2] + above[3]);
    best[rank + seen[rank]++] = chosen[c];
  }
  return true;
}

// The pairs (a, b) of ranks with (a + 1)(b + 1) <= 8, a-major: the only sums
// that can be among the 8 best of the 64, since each other pair has at least
// 8 pairs at or above both its ranks, all earlier in a-major order.
constexpr int kCandidatePairs = 20;
constexpr int8_t kPairA[kCandidatePairs] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1,
                                            1, 1, 2, 2, 3, 3, 4, 5, 6, 7};
constexpr int8_t kPairB[kCandidatePairs] = {0, 1, 2, 3, 4, 5, 6, 7, 0, 1,
                                            2, 3, 0, 1, 0, 1, 0, 0, 0, 0};

// One (token, channel) row of ForwardKernel with k = 8, without data branches:
// the 8 best of each half, then the 8 best of the candidate sums, ranked as
// the scalar path ranks the 64 (sum falling, a-major among equals). False,
// with nothing written, for a row with a NaN score or sum (+inf + -inf).
inline bool Top8Row(const float* s1, const float* s2, int64_t n, int64_t* best1,
                    int64_t* best2, int64_t row, float* scores,
                    int64_t* indices, int64_t* first, int64_t* second) {
  if (!Top8Positions(s1, n, best1) || !Top8Positions(s2, n, best2)) {
    return false;
  }
  float sums[kCandidatePairs];
  for (int c = 0; c < kCandidatePairs; ++c) {
    sums[c] = s1[best1[kPairA[c]]] + s2[best2[kPairB[c]]];
  }
  int64_t pairs[8];
  if (!Top8Positions(sums, kCandidatePairs, pairs)) return false;
  for (int o = 0; o < 8; ++o) {
    const int64_t i = best1[kPairA[pairs[o]]], j = best2[kPairB[pairs[o]]];
    scores[row * 8 + o] = sums[pairs[o]];
    indices[row * 8 + o] = i * n + j;
    first[row * 8 + o] = i;
    second[row * 8 + o] = j;
  }
  return true;
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
            if (l.k == 8 && l.n >= 8 &&
                Top8Row(s1, s2, l.n, best1.data(), best2.data(), row, scores,
                        indices, first, second)) {
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
