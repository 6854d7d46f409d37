#include "layers/ffn/expert_dispatch.h"

#include <tuple>
#include <vector>

namespace sparse_layers::layers {

ExpertSlots SortSlotsByExpert(const torch::Tensor& experts, int64_t n_experts) {
  const torch::Tensor flat_experts = experts.reshape({-1});
  ExpertSlots slots;
  // Stable, so each token's choices stay in expert order, as a per-expert
  // loop adds them.
  std::tie(slots.experts, slots.order) =
      flat_experts.sort(c10::optional<bool>(true), /*dim=*/0);
  // Slot s = t * k + i is token t's i-th choice; its token is s / k.
  slots.tokens = slots.order.div(experts.size(-1), "floor");
  const torch::Tensor counts = torch::bincount(flat_experts, {}, n_experts);
  slots.rows_per_expert.assign(counts.data_ptr<int64_t>(),
                               counts.data_ptr<int64_t>() + n_experts);
  return slots;
}

torch::Tensor CombineExpertOutputs(const torch::Tensor& sorted_outputs,
                                   const ExpertSlots& slots,
                                   const torch::Tensor& weights,
                                   const torch::Tensor& x) {
  // One index_add: no per-expert copies of the whole (N, d) output.
  const torch::Tensor gated =
      sorted_outputs * weights.reshape({-1, 1}).index_select(0, slots.order);
  return torch::zeros_like(x).index_add(0, slots.tokens, gated);
}

}  // namespace sparse_layers::layers
