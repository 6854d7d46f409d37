#include "layers/ffn/expert_dispatch.h"

namespace sparse_layers::layers {

torch::Tensor DispatchToExperts(const torch::Tensor& x,
                                const torch::Tensor& experts,
                                const torch::Tensor& weights, int64_t n_experts,
                                const ExpertFn& expert) {
  const int64_t k = experts.size(-1);
  const torch::Tensor flat_experts = experts.reshape({-1});
  const torch::Tensor flat_weights = weights.reshape({-1, 1});
  const torch::Tensor token_of =
      torch::arange(x.size(0), experts.options()).repeat_interleave(k);
  const torch::Tensor order = flat_experts.argsort();
  const torch::Tensor counts = torch::bincount(flat_experts, {}, n_experts);
  const auto count_values = counts.accessor<int64_t, 1>();
  torch::Tensor output = torch::zeros_like(x);
  int64_t start = 0;
  for (int64_t j = 0; j < n_experts; ++j) {
    const int64_t count = count_values[j];
    if (count == 0) continue;
    const torch::Tensor slots = order.slice(0, start, start + count);
    start += count;
    const torch::Tensor rows = token_of.index_select(0, slots);
    output = output.index_add(0, rows,
                              expert(j, x.index_select(0, rows)) *
                                  flat_weights.index_select(0, slots));
  }
  return output;
}

}  // namespace sparse_layers::layers
