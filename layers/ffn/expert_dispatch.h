// Dropless top-k dispatch shared by the mixtures (Switch / MoE-X, GPT-OSS
// MoE): tokens are grouped by expert, each expert runs only on its own rows,
// and output[t] = sum_j weight[t, j] * expert_j(x[t]). Cost grows with k, not
// with the number of experts.
#ifndef SPARSE_LAYERS_LAYERS_FFN_EXPERT_DISPATCH_H_
#define SPARSE_LAYERS_LAYERS_FFN_EXPERT_DISPATCH_H_

#include <torch/torch.h>

#include <functional>
#include <vector>

namespace sparse_layers::layers {

// Every token's k slots (slot s = t * k + i is token t's i-th choice) sorted
// by expert; stable, so each token's choices keep their order.
struct ExpertSlots {
  torch::Tensor order;   // (N k) the slots in sorted order
  torch::Tensor tokens;  // (N k) the token of each sorted slot
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

// Expert `expert` applied to the rows it received: (rows, d) -> (rows, d).
using ExpertFn =
    std::function<torch::Tensor(int64_t expert, const torch::Tensor& rows)>;

// x: (N, d); experts, weights: (N, k) chosen experts and their gates.
torch::Tensor DispatchToExperts(const torch::Tensor& x,
                                const torch::Tensor& experts,
                                const torch::Tensor& weights, int64_t n_experts,
                                const ExpertFn& expert);

// The same, one expert at a time (select its slots, gather, index_add into a
// copy of the output): DispatchToExperts's reference in tests.
torch::Tensor DispatchToExpertsReference(const torch::Tensor& x,
                                         const torch::Tensor& experts,
                                         const torch::Tensor& weights,
                                         int64_t n_experts,
                                         const ExpertFn& expert);

}  // namespace sparse_layers::layers

#endif  // SPARSE_LAYERS_LAYERS_FFN_EXPERT_DISPATCH_H_
