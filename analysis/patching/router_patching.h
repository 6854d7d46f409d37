// Causal interventions on sparse routing (arXiv:2606.07414 Sec. 4.3): record
// every product-key layer's (scores, indices) on one prompt batch, rerun
// another batch with them patched in at one position and a set of layers, and
// score the effect on a logit difference (NIE, rank flips). The dense-FFN
// baseline patches the FFN's hidden activations instead. Also the
// nearest-neighbour category agreement of gating vectors (or any
// representation), optionally among vectors of other input tokens only, against
// shuffled categories.
#ifndef SPARSE_LAYERS_ANALYSIS_PATCHING_ROUTER_PATCHING_H_
#define SPARSE_LAYERS_ANALYSIS_PATCHING_ROUTER_PATCHING_H_

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "layers/ffn/sgatlin.h"
#include "models/gpt.h"

namespace sparse_layers::analysis {

// Per block: its product-key FFN, or null when the block's FFN is another
// family.
std::vector<std::shared_ptr<layers::ProductKeyFfnImpl>> ProductKeyLayers(
    layers::GptImpl& model);

// What one forward pass of a (B, T) batch leaves to patch from: the logits
// at the last position (B, V), every product-key layer's routing (tokens
// flattened, (B T, C, k)) and every block's FFN hidden activations.
struct RecordedRun {
  torch::Tensor last_logits;
  std::vector<layers::ProductTopK> routing;  // Empty entries: dense blocks.
  std::vector<torch::Tensor> ffn_hidden;     // Per block, (B, T, ...).
};
// A model without a block's FFN hooks is an error naming the hook.
absl::StatusOr<RecordedRun> RunAndRecord(layers::GptImpl& model,
                                         const torch::Tensor& tokens);

enum class PatchKind {
  kRouting,    // Scores and indices of all channels (the paper's intervention).
  kFfnHidden,  // The FFN's hidden activations (the dense baseline).
};

// Last-position logits of `tokens` with `kind` of every block in `blocks`
// at `position` taken from `source` (recorded on a batch of the same shape);
// a block out of range, or routing patched into a block without a
// product-key FFN, is an error.
absl::StatusOr<torch::Tensor> RunPatched(layers::GptImpl& model,
                                         const torch::Tensor& tokens,
                                         const RecordedRun& source,
                                         PatchKind kind,
                                         const std::vector<int>& blocks,
                                         int position);

// m = logit(clean answer) - logit(counterfactual answer) per pair.
torch::Tensor LogitDifference(const torch::Tensor& last_logits,
                              const torch::Tensor& clean_answers,
                              const torch::Tensor& counterfactual_answers);

struct PatchEffect {
  // Mean over pairs of (m_clean - m_patched) / (m_clean - m_cf + 1e-8): 0 is
  // no effect, 1 the full counterfactual effect (the code's NIE).
  double mean_nie = 0;
  // Share of pairs whose counterfactual answer outscores the clean one.
  double rank_flip_rate = 0;
  double mean_logit_difference = 0;  // Mean m_patched.
};
PatchEffect SummariseEffect(const torch::Tensor& m_clean,
                            const torch::Tensor& m_counterfactual,
                            const torch::Tensor& m_patched);

// The dense (N, `width`) form of sparse gating vectors: row i holds scores[i]
// at indices[i] (one channel's k non-zeros), zeros elsewhere.
torch::Tensor GatingVectors(const torch::Tensor& indices,
                            const torch::Tensor& scores, int64_t width);

// Per vector: the share of its `neighbours` nearest (cosine, self excluded)
// that are in its category, and the same with the categories permuted (the
// null).
struct NeighbourAgreements {
  std::vector<double> agreement;
  std::vector<double> shuffled;
};
// With `token` (one input token per vector) neighbours are drawn only among
// vectors of another input token, so that agreement cannot come from token
// identity (sgatlin arXiv:2606.07414 Sec. 4.1, Fig. 5: clusters "partially
// explained" by the input token); null `token`: every vector is a candidate.
NeighbourAgreements NeighbourAgreementPerVector(
    const torch::Tensor& vectors, const std::vector<int>& category,
    const std::vector<int>* token, int neighbours, uint64_t seed);

// Means of per-vector agreements by group (the input token), one entry per
// group in ascending order: each token counts once however frequent, as the
// paper controls for token frequency (arXiv:2606.07414 Fig. 8).
struct GroupAgreement {
  int group = 0;
  int vectors = 0;
  double agreement = 0;
  double shuffled = 0;
};
std::vector<GroupAgreement> MeanAgreementByGroup(
    const NeighbourAgreements& agreements, const std::vector<int>& group);

}  // namespace sparse_layers::analysis

#endif  // SPARSE_LAYERS_ANALYSIS_PATCHING_ROUTER_PATCHING_H_
