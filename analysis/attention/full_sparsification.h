// A fully sparsified model (Lorsa, arXiv:2504.20938 App. H, Fig. 16): every
// fitted block's attention replaced at once by its Lorsa at the per-layer K,
// and the induction circuit read off it by ablating heads.
//
//   model:   per model (base; all_lorsa: every fitted block's attention its
//            Lorsa; all_attention_zeroed: those blocks' attention outputs
//            zero), test CE and the repeated-span probe's next-token loss
//            inside the first and the second copy (in-context copying).
//   circuit: in all_lorsa, the Lorsa head with the highest induction score
//            (z patterns) in a block after the first, and for every head of
//            the earlier blocks active on the probe, its QK group's attention
//            to the induction target after that head's output (z w_o) is
//            removed: the drop ranks the heads that feed the induction head
//            (App. H's attribution, here by ablation).
//   circuit_summary: the top-ranked head's previous-token score beside the
//            median over the other ablated heads (Fig. 16: a previous-token
//            head feeds the induction head). Heads are removed whole (zero
//            ablation), which also moves the next norm: a large head can rank
//            high for its size; mean ablation is not run.
#ifndef SPARSE_LAYERS_ANALYSIS_ATTENTION_FULL_SPARSIFICATION_H_
#define SPARSE_LAYERS_ANALYSIS_ATTENTION_FULL_SPARSIFICATION_H_

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "analysis/attention/lorsa_evaluation.h"
#include "datasets/text/token_shards.h"
#include "datasets/text/tokenizer.h"
#include "layers/attention/attention.h"
#include "layers/attention/lorsa.h"
#include "models/gpt.h"
#include "models/model_loader.h"

namespace sparse_layers::analysis {

// A Lorsa layer without one OV head's output z_h w_o[h] (K and the other
// heads' selection unchanged): the head-level path ablation.
class AblatedLorsaImpl : public layers::AttentionImpl {
 public:
  AblatedLorsaImpl(layers::Lorsa lorsa, int64_t head)
      : lorsa_(std::move(lorsa)), head_(head) {}
  torch::Tensor forward(const torch::Tensor& x) override;
  int64_t ForwardFlopsPerToken(int64_t sequence_length) const override {
    return lorsa_->ForwardFlopsPerToken(sequence_length);
  }

 private:
  layers::Lorsa lorsa_;
  int64_t head_;
};

// Each block's Lorsa heads' induction and previous-token scores (z patterns,
// LorsaZPatternScores) on `probe` (BOS + a span of `period` twice), reading
// each Lorsa's input as the model computes it: `lorsas` maps a block to its
// Lorsa (the model's stand-ins, so ablations upstream change these inputs).
struct BlockHeadScores {
  torch::Tensor induction, previous_token, induction_count,
      previous_token_count, active;  // (H)
  // Each QK group's attention to the induction target (InductionScores of
  // its pattern), (H_QK): continuous where a head's z-pattern score is not
  // (an ablation upstream can switch the head off).
  torch::Tensor group_induction;
};
std::vector<BlockHeadScores> LorsaHeadScores(
    layers::GptImpl& model, const std::vector<layers::Lorsa>& lorsas,
    const torch::Tensor& probe, int64_t period);

struct FullSparsificationOptions {
  int batches = 16;  // CE batches of 16 windows.
  int probe_sequences = 64;
  int probe_period = 16;
  std::string probe_words;  // As LorsaEvaluationOptions'.
  // An induction head must be active on at least this many second-copy
  // positions (its score is a mean over them), and an ablated head on as many
  // positions after the first (its previous-token score likewise).
  int64_t min_positions = 50;
  // Window length for CE, capped at the context (0: the base model's
  // context), the fits' as LorsaEvaluationOptions'.
  int sequence_length = 0;
  // The best head is an induction head only from this z-pattern score on.
  double min_induction_score = 0.3;
};

struct FullSparsificationTables {
  std::string model, circuit, circuit_summary;
};

// The tables for `base` and its Lorsa fits (one per block at the per-layer K:
// the K fitted at the most blocks; other fits are ignored; all of one seed).
// Every fitted block is replaced: all blocks where every block is fitted
// (smoke and cpu), not at paper scale (4 of 12). The model is left as given.
absl::StatusOr<FullSparsificationTables> FullySparsify(
    const layers::LoadedModel& base, const datasets::Tokenizer& tokenizer,
    const datasets::TokenShardSet& tokens, std::vector<LorsaFit>& fits,
    const FullSparsificationOptions& options);

}  // namespace sparse_layers::analysis

#endif  // SPARSE_LAYERS_ANALYSIS_ATTENTION_FULL_SPARSIFICATION_H_
