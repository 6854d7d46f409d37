// The unigram control of the isoflop study: the cross-entropy a model that
// ignores context reaches on the validation split, fitted on the training
// split's token frequencies (add-one smoothing, so a token unseen in training
// costs log(tokens + vocabulary) nats, not infinity). Every trained FFN type
// must beat it before its loss orders anything (sgatlin arXiv:2606.07414
// Sec. 3.1 compares trained language models, not frequency tables).
#ifndef SPARSE_LAYERS_ANALYSIS_SCALING_UNIGRAM_BASELINE_H_
#define SPARSE_LAYERS_ANALYSIS_SCALING_UNIGRAM_BASELINE_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "datasets/text/token_shards.h"

namespace sparse_layers::analysis {

using datasets::TokenIds;
using datasets::TokenShardSet;

// How often each id occurs in `shards` (vocab_size entries); an id at or
// above vocab_size is an error.
absl::StatusOr<std::vector<int64_t>> TokenCounts(
    const std::vector<TokenIds>& shards, int64_t vocab_size);

// Mean -log p(token) over the validation tokens, p the add-one smoothed
// training frequencies: p(v) = (train[v] + 1) / (sum(train) + V). Needs equal
// sizes and at least one validation token.
absl::StatusOr<double> UnigramCrossEntropy(
    const std::vector<int64_t>& train_counts,
    const std::vector<int64_t>& validation_counts);

// The same on two opened splits of one tokenizer.
absl::StatusOr<double> UnigramCrossEntropy(const TokenShardSet& train,
                                           const TokenShardSet& validation);

}  // namespace sparse_layers::analysis

#endif  // SPARSE_LAYERS_ANALYSIS_SCALING_UNIGRAM_BASELINE_H_
