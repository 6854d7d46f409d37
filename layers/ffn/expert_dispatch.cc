#include "layers/ffn/expert_dispatch.h"

#include <vector>

namespace sparse_layers::layers {
namespace {

// Slot s = t * k + i is token t's i-th choice; its token is s / k.
torch::Tensor TokenOfSlot(const torch::Tensor& x,
                          const torch::Tensor& experts) {
  return torch::arange(x.size(0), experts.options())
      .repeat_interleave(experts.size(-1));
}

}  // namespace

torch::Tensor DispatchToExperts(const torch::Tensor& x,
                                const torch::Tensor& experts,
                                const torch::Tensor& weights, int64_t n_experts,
                                const ExpertFn& expert) {
  const torch::Tensor flat_experts = experts.reshape({-1});
  // Stable, so each token's choices stay in expert order, as the reference
  // adds them.
  const torch::Tensor order =
      std::get<1>(flat_experts.sort(c10::optional<bool>(true), /*dim=*/0));
  const torch::Tensor sorted_tokens =
      TokenOfSlot(x, experts).index_select(0, order);
  const torch::Tensor counts = torch::bincount(flat_experts, {}, n_experts);
  std::vector<int64_t> sizes(counts.data_ptr<int64_t>(),
                             counts.data_ptr<int64_t>() + n_experts);
  // One gather, one split (whose backward is one cat), one cat and one
  // index_add: no per-expert copies of the whole (N, d) output.
  const std::vector<torch::Tensor> rows_of =
      x.index_select(0, sorted_tokens).split_with_sizes(sizes);
  std::vector<torch::Tensor> outputs;
  outputs.reserve(n_experts);
  for (int64_t j = 0; j < n_experts; ++j) {
    if (sizes[j] > 0) outputs.push_back(expert(j, rows_of[j]));
  }
  const torch::Tensor gated =
      torch::cat(outputs) * weights.reshape({-1, 1}).index_select(0, order);
  return torch::zeros_like(x).index_add(0, sorted_tokens, gated);
}

torch::Tensor DispatchToExpertsReference(const torch::Tensor& x,
                                         const torch::Tensor& experts,
                                         const torch::Tensor& weights,
                                         int64_t n_experts,
                                         const ExpertFn& expert) {
  const torch::Tensor flat_experts = experts.reshape({-1});
  const torch::Tensor flat_weights = weights.reshape({-1, 1});
  const torch::Tensor token_of = TokenOfSlot(x, experts);
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
