#include "ops/core/topk.h"

#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <ATen/record_function.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "ops/core/float_lanes.h"
#include "ops/core/largest_k.h"

namespace sparse_layers::layers {

TopKCodes ReluTopK(const torch::Tensor& pre, int64_t k) {
  TORCH_CHECK(k > 0 && k <= pre.size(-1), "top-k needs 0 < k <= width");
  const torch::Tensor activated = torch::relu(pre);
  torch::Tensor indices;
  {
    // The selection itself is not differentiated.
    torch::NoGradGuard no_grad;
    indices = std::get<1>(LargestK(activated, k, /*sorted=*/false));
  }
  return {activated.gather(-1, indices), indices};
}

torch::Tensor Densify(const TopKCodes& codes, int64_t width) {
  auto shape = codes.values.sizes().vec();
  shape.back() = width;
  // Added, not written: a listed code's padding may repeat a unit at 0.
  return torch::zeros(shape, codes.values.options())
      .scatter_add(-1, codes.indices, codes.values);
}

namespace {

template <typename T>
T Dot(const T* a, const T* b, int64_t n) {
  T sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

// Four lane accumulators (16 floats a step), then their lanes in order, then
// the tail. Named, not an array: GCC at -O2 kept an array of them on the stack
// and stored each partial sum back every step (2.2x slower).
template <>
float Dot<float>(const float* a, const float* b, int64_t n) {
  FloatLanes acc0 = {}, acc1 = {}, acc2 = {}, acc3 = {};
  int64_t i = 0;
  for (; i + 4 * kLanes <= n; i += 4 * kLanes) {
    acc0 += LoadLanes(a + i) * LoadLanes(b + i);
    acc1 += LoadLanes(a + i + kLanes) * LoadLanes(b + i + kLanes);
    acc2 += LoadLanes(a + i + 2 * kLanes) * LoadLanes(b + i + 2 * kLanes);
    acc3 += LoadLanes(a + i + 3 * kLanes) * LoadLanes(b + i + 3 * kLanes);
  }
  for (; i + kLanes <= n; i += kLanes) {
    acc0 += LoadLanes(a + i) * LoadLanes(b + i);
  }
  const FloatLanes total = (acc0 + acc1) + (acc2 + acc3);
  float sum = 0;
  for (int64_t l = 0; l < kLanes; ++l) sum += total[l];
  for (; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

// y += a[0] x[0], then += a[1] x[1], ... for up to kGroup vectors in one pass
// over y: element by element in that order, so the bits are those of one
// pass per vector (and of any vector width), with y loaded and stored once.
constexpr int64_t kGroup = 4;

template <typename T>
void AddScaled(const T* a, const T* const* x, int64_t count, int64_t n, T* y) {
  int64_t i = 0;
  if constexpr (std::is_same_v<T, float>) {
    FloatLanes lanes_a[kGroup];
    for (int64_t v = 0; v < count; ++v) {
      for (int64_t l = 0; l < kLanes; ++l) lanes_a[v][l] = a[v];
    }
    if (count == kGroup) {
      // A whole group unrolled, its scales and pointers in registers.
      const float *x0 = x[0], *x1 = x[1], *x2 = x[2], *x3 = x[3];
      const FloatLanes a0 = lanes_a[0], a1 = lanes_a[1], a2 = lanes_a[2],
                       a3 = lanes_a[3];
      for (; i + kLanes <= n; i += kLanes) {
        FloatLanes sum = LoadLanes(y + i) + a0 * LoadLanes(x0 + i);
        sum = sum + a1 * LoadLanes(x1 + i);
        sum = sum + a2 * LoadLanes(x2 + i);
        sum = sum + a3 * LoadLanes(x3 + i);
        std::memcpy(y + i, &sum, sizeof sum);
      }
    }
    for (; i + kLanes <= n; i += kLanes) {
      FloatLanes sum = LoadLanes(y + i);
      for (int64_t v = 0; v < count; ++v) {
        sum = sum + lanes_a[v] * LoadLanes(x[v] + i);
      }
      std::memcpy(y + i, &sum, sizeof sum);
    }
  }
  for (; i < n; ++i) {
    T sum = y[i];
    for (int64_t v = 0; v < count; ++v) sum += a[v] * x[v][i];
    y[i] = sum;
  }
}

// Asks for the cache lines of the next group's vectors while this group is
// summed: the gathered vectors are scattered over megabytes (1.5x on
// GatherSum at the sgatlin benchmark's d = 256).
template <typename T>
void Prefetch(const T* const* x, int64_t count, int64_t n) {
  constexpr int64_t kLine = 64 / sizeof(T);
  for (int64_t v = 0; v < count; ++v) {
    for (int64_t i = 0; i < n; i += kLine) __builtin_prefetch(x[v] + i);
  }
}

// The flat positions p = b * k + j of the (B, k) indices grouped by the row
// they select, in increasing p within a row (a counting sort): per-row sums
// then add in token order, and rows can be split over threads without two
// writing the same row.
struct RowLists {
  torch::Tensor
      starts;  // (rows + 1,) int64: row r's are [starts[r], starts[r + 1]).
  torch::Tensor positions;  // (B * k,) int64.
};

RowLists ListByRow(const torch::Tensor& indices, int64_t num_rows) {
  const int64_t count = indices.numel();
  const int64_t* index = indices.data_ptr<int64_t>();
  RowLists lists{torch::zeros({num_rows + 1}, indices.options()),
                 torch::empty({count}, indices.options())};
  int64_t* starts = lists.starts.data_ptr<int64_t>();
  for (int64_t p = 0; p < count; ++p) {
    TORCH_CHECK(index[p] >= 0 && index[p] < num_rows, "row index ", index[p],
                " out of range [0, ", num_rows, ")");
    ++starts[index[p] + 1];
  }
  for (int64_t r = 0; r < num_rows; ++r) starts[r + 1] += starts[r];
  std::vector<int64_t> next(starts, starts + num_rows);
  int64_t* positions = lists.positions.data_ptr<int64_t>();
  for (int64_t p = 0; p < count; ++p) positions[next[index[p]]++] = p;
  return lists;
}

struct SparseRowsShape {
  int64_t tokens, k, num_rows, width;
};

// The token vectors of list entries [q, min(q + kGroup, end)):
// base + (positions[q + v] / k) * width. Returns how many.
template <typename T>
int64_t TokenVectors(const T* base, const int64_t* positions, int64_t q,
                     int64_t end, const SparseRowsShape& s, const T** out) {
  const int64_t count = std::max<int64_t>(0, std::min(kGroup, end - q));
  for (int64_t v = 0; v < count; ++v) {
    out[v] = base + (positions[q + v] / s.k) * s.width;
  }
  return count;
}

// Prefetches the token vectors of the group after q, up to `last`.
template <typename T>
void PrefetchNextGroup(const T* base, const int64_t* positions, int64_t q,
                       int64_t last, const SparseRowsShape& s) {
  const T* ahead[kGroup];
  Prefetch(ahead, TokenVectors(base, positions, q + kGroup, last, s, ahead),
           s.width);
}

// out[b, j] = rows[indices[b, j]] . x[b], a row at a time: each row is read
// once and the tokens that select it are gathered.
template <typename T>
void GatherDotKernel(const T* x, const T* rows, const RowLists& lists,
                     const SparseRowsShape& s, T* out) {
  const int64_t* starts = lists.starts.data_ptr<int64_t>();
  const int64_t* positions = lists.positions.data_ptr<int64_t>();
  at::parallel_for(0, s.num_rows, 16, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const T* row = rows + r * s.width;
      for (int64_t q = starts[r]; q < starts[r + 1]; q += kGroup) {
        PrefetchNextGroup(x, positions, q, starts[end], s);
        const T* vectors[kGroup];
        const int64_t count =
            TokenVectors(x, positions, q, starts[r + 1], s, vectors);
        for (int64_t v = 0; v < count; ++v) {
          out[positions[q + v]] = Dot(row, vectors[v], s.width);
        }
      }
    }
  });
}

// The selected rows of flat entries [p, min(p + kGroup, end)):
// rows + indices[p + v] * width, as TokenVectors is for the token side.
// Returns how many.
template <typename T>
int64_t SelectedRows(const T* rows, const int64_t* indices, int64_t p,
                     int64_t end, const SparseRowsShape& s, const T** out) {
  const int64_t count = std::max<int64_t>(0, std::min(kGroup, end - p));
  for (int64_t v = 0; v < count; ++v) {
    out[v] = rows + indices[p + v] * s.width;
  }
  return count;
}

// out[b] = sum_j weights[b, j] rows[indices[b, j]], a token at a time.
template <typename T>
void GatherSumKernel(const T* weights, const int64_t* indices, const T* rows,
                     const SparseRowsShape& s, T* out) {
  at::parallel_for(0, s.tokens, 16, [&](int64_t begin, int64_t end) {
    const int64_t last = end * s.k;
    for (int64_t b = begin; b < end; ++b) {
      T* y = out + b * s.width;
      std::fill(y, y + s.width, T(0));
      for (int64_t j = 0; j < s.k; j += kGroup) {
        const int64_t p = b * s.k + j;
        const T* ahead[kGroup];
        Prefetch(ahead, SelectedRows(rows, indices, p + kGroup, last, s, ahead),
                 s.width);
        const T* vectors[kGroup];
        const int64_t count =
            SelectedRows(rows, indices, p, (b + 1) * s.k, s, vectors);
        AddScaled(weights + p, vectors, count, s.width, y);
      }
    }
  });
}

// out[r] = sum over (b, j) selecting r of weights[b, j] x[b], every row
// written (zero where none selects it), a row at a time. With dot_rows, also
// dots[b, j] = dot_rows[r] . x[b] for the same pairs, from the same group of
// x[b] while in cache (SparseDecode's backward reads grad[b] once for both).
template <typename T>
void ScatterOuterKernel(const T* weights, const T* x, const RowLists& lists,
                        const SparseRowsShape& s, T* out,
                        const T* dot_rows = nullptr, T* dots = nullptr) {
  const int64_t* starts = lists.starts.data_ptr<int64_t>();
  const int64_t* positions = lists.positions.data_ptr<int64_t>();
  at::parallel_for(0, s.num_rows, 16, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      T* y = out + r * s.width;
      std::fill(y, y + s.width, T(0));
      for (int64_t q = starts[r]; q < starts[r + 1]; q += kGroup) {
        PrefetchNextGroup(x, positions, q, starts[end], s);
        const T* vectors[kGroup];
        const int64_t count =
            TokenVectors(x, positions, q, starts[r + 1], s, vectors);
        T scales[kGroup];
        for (int64_t v = 0; v < count; ++v) {
          const int64_t p = positions[q + v];
          if (dot_rows != nullptr) {
            dots[p] = Dot(dot_rows + r * s.width, vectors[v], s.width);
          }
          scales[v] = weights[p];
        }
        AddScaled(scales, vectors, count, s.width, y);
      }
    }
  });
}

SparseRowsShape ShapeOf(const torch::Tensor& indices,
                        const torch::Tensor& rows) {
  return {indices.size(0), indices.size(1), rows.size(0), rows.size(1)};
}

torch::Tensor GatherDot(const torch::Tensor& x, const torch::Tensor& rows,
                        const torch::Tensor& indices, const RowLists& lists) {
  torch::Tensor out = torch::empty(indices.sizes(), x.options());
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "GatherDot", [&] {
    GatherDotKernel<scalar_t>(x.data_ptr<scalar_t>(), rows.data_ptr<scalar_t>(),
                              lists, ShapeOf(indices, rows),
                              out.data_ptr<scalar_t>());
  });
  return out;
}

torch::Tensor GatherSum(const torch::Tensor& weights,
                        const torch::Tensor& indices,
                        const torch::Tensor& rows) {
  torch::Tensor out =
      torch::empty({indices.size(0), rows.size(1)}, weights.options());
  AT_DISPATCH_FLOATING_TYPES(weights.scalar_type(), "GatherSum", [&] {
    GatherSumKernel<scalar_t>(weights.data_ptr<scalar_t>(),
                              indices.data_ptr<int64_t>(),
                              rows.data_ptr<scalar_t>(), ShapeOf(indices, rows),
                              out.data_ptr<scalar_t>());
  });
  return out;
}

torch::Tensor ScatterOuter(const torch::Tensor& weights, const torch::Tensor& x,
                           const torch::Tensor& indices,
                           const torch::Tensor& rows, const RowLists& lists) {
  torch::Tensor out = torch::empty_like(rows);
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "ScatterOuter", [&] {
    ScatterOuterKernel<scalar_t>(
        weights.data_ptr<scalar_t>(), x.data_ptr<scalar_t>(), lists,
        ShapeOf(indices, rows), out.data_ptr<scalar_t>());
  });
  return out;
}

RowLists SavedLists(torch::autograd::AutogradContext* ctx) {
  return {ctx->saved_data["starts"].toTensor(),
          ctx->saved_data["positions"].toTensor()};
}

void SaveLists(torch::autograd::AutogradContext* ctx, const RowLists& lists) {
  ctx->saved_data["starts"] = lists.starts;
  ctx->saved_data["positions"] = lists.positions;
}

// x (B, I), rows (width, I), indices (B, k) -> (B, k). Backward: d/dx is
// GatherSum of the gradient, d/drows ScatterOuter of it against x.
class SparseDotFunction : public torch::autograd::Function<SparseDotFunction> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx,
                               const torch::Tensor& x,
                               const torch::Tensor& rows,
                               const torch::Tensor& indices) {
    // A named range: op profiles see the forward, which is no ATen op.
    RECORD_FUNCTION("SparseDot", std::vector<c10::IValue>());
    const torch::Tensor xc = x.contiguous(), rc = rows.contiguous(),
                        ic = indices.contiguous();
    const RowLists lists = ListByRow(ic, rc.size(0));
    ctx->save_for_backward({xc, rc, ic});
    SaveLists(ctx, lists);
    return GatherDot(xc, rc, ic, lists);
  }

  static torch::autograd::variable_list backward(
      torch::autograd::AutogradContext* ctx,
      torch::autograd::variable_list grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor &x = saved[0], &rows = saved[1], &indices = saved[2];
    const torch::Tensor grad = grad_outputs[0].contiguous();
    return {GatherSum(grad, indices, rows),
            ScatterOuter(grad, x, indices, rows, SavedLists(ctx)),
            torch::Tensor()};
  }
};

// weights (B, k), indices (B, k), rows (width, O) -> (B, O). Backward: both
// gradients in one walk of the rows (ScatterOuterKernel with dot_rows).
class SparseDecodeFunction
    : public torch::autograd::Function<SparseDecodeFunction> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx,
                               const torch::Tensor& weights,
                               const torch::Tensor& indices,
                               const torch::Tensor& rows) {
    // A named range: op profiles see the forward, which is no ATen op.
    RECORD_FUNCTION("SparseDecode", std::vector<c10::IValue>());
    const torch::Tensor wc = weights.contiguous(), ic = indices.contiguous(),
                        rc = rows.contiguous();
    const RowLists lists = ListByRow(ic, rc.size(0));
    ctx->save_for_backward({wc, ic, rc});
    SaveLists(ctx, lists);
    return GatherSum(wc, ic, rc);
  }

  static torch::autograd::variable_list backward(
      torch::autograd::AutogradContext* ctx,
      torch::autograd::variable_list grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor &weights = saved[0], &indices = saved[1],
                        &rows = saved[2];
    const torch::Tensor grad = grad_outputs[0].contiguous();
    torch::Tensor grad_weights = torch::empty_like(weights);
    torch::Tensor grad_rows = torch::empty_like(rows);
    AT_DISPATCH_FLOATING_TYPES(rows.scalar_type(), "SparseDecodeBackward", [&] {
      ScatterOuterKernel<scalar_t>(
          weights.data_ptr<scalar_t>(), grad.data_ptr<scalar_t>(),
          SavedLists(ctx), ShapeOf(indices, rows),
          grad_rows.data_ptr<scalar_t>(), rows.data_ptr<scalar_t>(),
          grad_weights.data_ptr<scalar_t>());
    });
    return {grad_weights, torch::Tensor(), grad_rows};
  }
};

bool FusedOnCpu(const torch::Tensor& a, const torch::Tensor& rows) {
  return a.device().is_cpu() && rows.device().is_cpu() &&
         a.scalar_type() == rows.scalar_type() &&
         (a.scalar_type() == torch::kFloat ||
          a.scalar_type() == torch::kDouble);
}

}  // namespace

torch::Tensor SparseDecode(const TopKCodes& codes, const torch::Tensor& rows) {
  TORCH_CHECK(rows.dim() == 2 && codes.values.sizes() == codes.indices.sizes(),
              "SparseDecode: values and indices (..., k), rows (width, O)");
  TORCH_CHECK(codes.indices.scalar_type() == torch::kLong,
              "SparseDecode: int64 indices");
  const int64_t k = codes.values.size(-1);
  auto shape = codes.values.sizes().vec();
  shape.back() = rows.size(1);
  if (!FusedOnCpu(codes.values, rows)) {
    return SparseDecodeReference(codes, rows).view(shape);
  }
  return SparseDecodeFunction::apply(codes.values.reshape({-1, k}),
                                     codes.indices.reshape({-1, k}), rows)
      .view(shape);
}

torch::Tensor SparseDecodeReference(const TopKCodes& codes,
                                    const torch::Tensor& rows) {
  const int64_t k = codes.values.size(-1);
  const torch::Tensor indices = codes.indices.reshape({-1});
  const torch::Tensor weights = codes.values.reshape({-1});
  const int64_t bags = indices.size(0) / k;
  const torch::Tensor offsets =
      torch::arange(0, bags * k, k, indices.options());
  // mode 0 = sum; per_sample_weights scale each gathered row.
  const torch::Tensor decoded = std::get<0>(torch::embedding_bag(
      rows, indices, offsets, /*scale_grad_by_freq=*/false, /*mode=*/0,
      /*sparse=*/false, weights));
  auto shape = codes.values.sizes().vec();
  shape.back() = rows.size(1);
  return decoded.view(shape);
}

torch::Tensor SparseDot(const torch::Tensor& x, const torch::Tensor& rows,
                        const torch::Tensor& indices) {
  TORCH_CHECK(x.dim() == 2 && rows.dim() == 2 && indices.dim() == 2 &&
                  x.size(0) == indices.size(0) && x.size(1) == rows.size(1),
              "SparseDot: x (B, I), rows (width, I), indices (B, k)");
  TORCH_CHECK(indices.scalar_type() == torch::kLong,
              "SparseDot: int64 indices");
  if (!FusedOnCpu(x, rows)) return SparseDotReference(x, rows, indices);
  return SparseDotFunction::apply(x, rows, indices);
}

torch::Tensor SparseDotReference(const torch::Tensor& x,
                                 const torch::Tensor& rows,
                                 const torch::Tensor& indices) {
  const torch::Tensor gathered =
      rows.index_select(0, indices.reshape({-1}))
          .view({indices.size(0), indices.size(1), rows.size(1)});
  return (gathered * x.unsqueeze(1)).sum(-1);
}

}  // namespace sparse_layers::layers
