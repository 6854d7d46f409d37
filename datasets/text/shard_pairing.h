// Token shards checked against what reads them: the tokenizer a tool decodes
// them with (shards of another tokenizer with the same vocabulary size would
// decode to plausible-looking wrong text) and the model they feed (ids beyond
// its embedding failed inside LibTorch as "index out of range in self").
#ifndef SPARSE_LAYERS_DATASETS_TEXT_SHARD_PAIRING_H_
#define SPARSE_LAYERS_DATASETS_TEXT_SHARD_PAIRING_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "datasets/text/token_shards.h"

namespace sparse_layers::datasets {

// OK when `tokens`' manifest records the SHA-256 of the tokenizer at
// `tokenizer_path` (of TokenizerDigestPath, as encode_shards records it);
// else an error naming the manifest, the tokenizer and both digests.
absl::Status CheckEncodedWith(const TokenShardSet& tokens,
                              const std::string& tokenizer_path);

// OK when every id the shards may hold (below their manifest's vocab_size)
// has a row in a `model_vocab_size`-row embedding; else an error naming the
// manifest, the model and both sizes.
absl::Status CheckFitsModelVocabulary(const TokenShardSet& tokens,
                                      int64_t model_vocab_size,
                                      absl::string_view model);

}  // namespace sparse_layers::datasets

#endif  // SPARSE_LAYERS_DATASETS_TEXT_SHARD_PAIRING_H_
