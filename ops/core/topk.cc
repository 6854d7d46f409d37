#include "ops/core/topk.h"

#include <ATen/Parallel.h>

namespace sparse_layers::layers {

TopKCodes ReluTopK(const torch::Tensor& pre, int64_t k) {
  TORCH_CHECK(k > 0 && k <= pre.size(-1), "top-k needs 0 < k <= width");
  const torch::Tensor activated = torch::relu(pre);
  torch::Tensor indices;
  {
    // The selection itself is not differentiated.
    torch::NoGradGuard no_grad;
    indices = std::get<1>(activated.topk(k, -1, /*largest=*/true,
                                         /*sorted=*/false));
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

torch::Tensor SparseDecode(const TopKCodes& codes, const torch::Tensor& rows) {
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

namespace {

// out[b, j] = rows[indices[b, j]] . x[b], parallel over tokens.
template <typename T>
void SparseDotKernel(const T* x, const T* rows, const int64_t* indices,
                     int64_t tokens, int64_t k, int64_t width, T* out) {
  at::parallel_for(0, tokens, 64, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      const T* xb = x + b * width;
      for (int64_t j = 0; j < k; ++j) {
        const T* row = rows + indices[b * k + j] * width;
        T sum = 0;
        for (int64_t i = 0; i < width; ++i) sum += row[i] * xb[i];
        out[b * k + j] = sum;
      }
    }
  });
}

// grad_rows[indices[b, j]] += grad[b, j] x[b]; threads own column slices, so
// no two write the same element.
template <typename T>
void ScatterOuterKernel(const T* grad, const T* x, const int64_t* indices,
                        int64_t tokens, int64_t k, int64_t width,
                        T* grad_rows) {
  at::parallel_for(0, width, 16, [&](int64_t begin, int64_t end) {
    for (int64_t b = 0; b < tokens; ++b) {
      const T* xb = x + b * width;
      for (int64_t j = 0; j < k; ++j) {
        const T g = grad[b * k + j];
        T* row = grad_rows + indices[b * k + j] * width;
        for (int64_t i = begin; i < end; ++i) row[i] += g * xb[i];
      }
    }
  });
}

class SparseDotFunction : public torch::autograd::Function<SparseDotFunction> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx,
                               const torch::Tensor& x,
                               const torch::Tensor& rows,
                               const torch::Tensor& indices) {
    const torch::Tensor xc = x.contiguous(), rc = rows.contiguous(),
                        ic = indices.contiguous();
    ctx->save_for_backward({xc, rc, ic});
    torch::Tensor out = torch::empty(ic.sizes(), xc.options());
    AT_DISPATCH_FLOATING_TYPES(xc.scalar_type(), "SparseDot", [&] {
      SparseDotKernel<scalar_t>(xc.data_ptr<scalar_t>(),
                                rc.data_ptr<scalar_t>(), ic.data_ptr<int64_t>(),
                                ic.size(0), ic.size(1), xc.size(1),
                                out.data_ptr<scalar_t>());
    });
    return out;
  }

  static torch::autograd::variable_list backward(
      torch::autograd::AutogradContext* ctx,
      torch::autograd::variable_list grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor &x = saved[0], &rows = saved[1], &indices = saved[2];
    const torch::Tensor grad = grad_outputs[0].contiguous();
    // d/dx: sum_j grad[b, j] rows[indices[b, j]], SparseDecode's sum.
    const torch::Tensor grad_x = SparseDecode({grad, indices}, rows);
    torch::Tensor grad_rows = torch::zeros_like(rows);
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "SparseDotBackward", [&] {
      ScatterOuterKernel<scalar_t>(
          grad.data_ptr<scalar_t>(), x.data_ptr<scalar_t>(),
          indices.data_ptr<int64_t>(), indices.size(0), indices.size(1),
          x.size(1), grad_rows.data_ptr<scalar_t>());
    });
    return {grad_x, grad_rows, torch::Tensor()};
  }
};

}  // namespace

torch::Tensor SparseDot(const torch::Tensor& x, const torch::Tensor& rows,
                        const torch::Tensor& indices) {
  TORCH_CHECK(x.dim() == 2 && rows.dim() == 2 && indices.dim() == 2 &&
                  x.size(0) == indices.size(0) && x.size(1) == rows.size(1),
              "SparseDot: x (B, I), rows (width, I), indices (B, k)");
  TORCH_CHECK(indices.scalar_type() == torch::kLong,
              "SparseDot: int64 indices");
  if (!x.device().is_cpu() || !rows.device().is_cpu() ||
      x.scalar_type() != rows.scalar_type()) {
    return SparseDotReference(x, rows, indices);
  }
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
