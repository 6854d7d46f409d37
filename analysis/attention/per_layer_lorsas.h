// Each block's Lorsa at the per-layer K (Lorsa, arXiv:2504.20938 Fig. 3: one K
// fitted at every block), the analyses that read every block at once take.
#ifndef SPARSE_LAYERS_ANALYSIS_ATTENTION_PER_LAYER_LORSAS_H_
#define SPARSE_LAYERS_ANALYSIS_ATTENTION_PER_LAYER_LORSAS_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "analysis/attention/lorsa_evaluation.h"
#include "layers/attention/lorsa.h"

namespace sparse_layers::analysis {

struct PerLayerLorsas {
  std::vector<layers::Lorsa> by_block;  // Null where no block's fit is.
  int top_k = 0;                        // The per-layer K.
  int64_t seed = 0;                     // The fits' runtime.seed (one).
  int count = 0;                        // Blocks with a Lorsa.
};

// The Lorsa fits at the K fitted at the most blocks (MostFrequentKey), in
// eval mode, for a model of `blocks` blocks; fails on no Lorsa fit, a block
// outside the model, two fits of one block or fits of different seeds.
absl::StatusOr<PerLayerLorsas> LorsasAtPerLayerK(std::vector<LorsaFit>& fits,
                                                 size_t blocks);

// The window the analyses read: the fits' `sequence_length` capped at the
// base model's `context`, or the context for 0 (a pretrained base's context
// is longer than the window its Lorsas are fitted on, Lorsa Sec. 3.2).
int64_t FitWindowLength(int64_t context, int64_t sequence_length);

}  // namespace sparse_layers::analysis

#endif  // SPARSE_LAYERS_ANALYSIS_ATTENTION_PER_LAYER_LORSAS_H_
