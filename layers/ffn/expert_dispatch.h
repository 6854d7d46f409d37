// Dropless top-k dispatch shared by the mixtures (Switch / MoE-X, GPT-OSS
// MoE): every token's k slots are sorted by expert, the experts run side by
// side on their own rows (ops/core GroupedLinear), and
// output[t] = sum_j weight[t, j] * expert_j(x[t]). Cost grows with k, not
// with the number of experts.
#ifndef SPARSE_LAYERS_LAYERS_FFN_EXPERT_DISPATCH_H_
#define SPARSE_LAYERS_LAYERS_FFN_EXPERT_DISPATCH_H_

#include <torch/torch.h>

#include <vector>

namespace sparse_layers::layers {

// Every token's k slots (slot s = t * k + i is token t's i-th choice) sorted
// by expert; stable, so each token's choices keep their order.
struct ExpertSlots {
  torch::Tensor order;    // (N k) the slots in sorted order
  torch::Tensor tokens;   // (N k) the token of each sorted slot
  torch::Tensor experts;  // (N k) the expert of each sorted slot, ascending
  std::vector<int64_t> rows_per_expert;
};

// experts: (N, k) chosen experts in [0, n_experts).
ExpertSlots SortSlotsByExpert(const torch::Tensor& experts, int64_t n_experts);

// output[t] = sum over t's slots of weight[t, i] * the slot's row of
// sorted_outputs ((N k, d), in the sorted order of `slots`); (N, d) like x.
torch::Tensor CombineExpertOutputs(const torch::Tensor& sorted_outputs,
                                   const ExpertSlots& slots,
                                   const torch::Tensor& weights,
                                   const torch::Tensor& x);

}  // namespace sparse_layers::layers

#endif  // SPARSE_LAYERS_LAYERS_FFN_EXPERT_DISPATCH_H_
