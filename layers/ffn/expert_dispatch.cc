#include "layers/ffn/expert_dispatch.h"

#include <vector>

namespace sparse_layers::layers {
namespace {

// Slot s = t * k + i is token t's i-th choice; its token is s / k.
torch::Tensor TokenOfSlot(const torch::Tensor& experts) {
  return torch::arange(experts.size(0), experts.options())
      .repeat_interleave(experts.size(-1));
}

}  // namespace

ExpertSlots SortSlotsByExpert(const torch::Tensor& experts, int64_t n_experts) {
  const torch::Tensor flat_experts = experts.reshape({-1});
  ExpertSlots slots;
  slots.order =
      std::get<1>(flat_experts.sort(c10::optional<bool>(true), /*dim=*/0));
  slots.tokens = TokenOfSlot(experts).index_select(0, slots.order);
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

torch::Tensor DispatchToExperts(const torch::Tensor& x,
                                const torch::Tensor& experts,
                                const torch::Tensor& weights, int64_t n_experts,
                                const ExpertFn& expert) {
  const ExpertSlots slots = SortSlotsByExpert(experts, n_experts);
  // One gather and one split (whose backward is one cat) in, one cat out.
  const std::vector<torch::Tensor> rows_of =
      x.index_select(0, slots.tokens).split_with_sizes(slots.rows_per_expert);
  std::vector<torch::Tensor> outputs;
  outputs.reserve(n_experts);
  for (int64_t j = 0; j < n_experts; ++j) {
    if (slots.rows_per_expert[j] > 0) outputs.push_back(expert(j, rows_of[j]));
  }
  return CombineExpertOutputs(torch::cat(outputs), slots, weights, x);
}

torch::Tensor DispatchToExpertsReference(const torch::Tensor& x,
                                         const torch::Tensor& experts,
                                         const torch::Tensor& weights,
                                         int64_t n_experts,
                                         const ExpertFn& expert) {
  const torch::Tensor flat_experts = experts.reshape({-1});
  const torch::Tensor flat_weights = weights.reshape({-1, 1});
  const torch::Tensor token_of = TokenOfSlot(experts);
  torch::Tensor output = torch::zeros_like(x);
  for (int64_t j = 0; j < n_experts; ++j) {
    const torch::Tensor slots = (flat_experts == j).nonzero().view({-1});
    if (slots.numel() == 0) continue;
    const torch::Tensor rows = token_of.index_select(0, slots);
    output = output.index_add(0, rows,
                              expert(j, x.index_select(0, rows)) *
                                  flat_weights.index_select(0, slots));
  }
  return output;
}

}  // namespace sparse_layers::layers
