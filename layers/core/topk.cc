#include "layers/core/topk.h"

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
  return torch::zeros(shape, codes.values.options())
      .scatter(-1, codes.indices, codes.values);
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

}  // namespace sparse_layers::layers
