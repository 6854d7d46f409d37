// Token shards checked against the tokenizer a tool decodes them with: shards
// of another tokenizer with the same vocabulary size would otherwise decode
// to plausible-looking wrong text.
#ifndef SPARSE_LAYERS_DATASETS_TEXT_TOKENIZER_PAIRING_H_
#define SPARSE_LAYERS_DATASETS_TEXT_TOKENIZER_PAIRING_H_

#include <string>

#include "absl/status/status.h"
#include "datasets/text/token_shards.h"

namespace sparse_layers::datasets {

// OK when `tokens`' manifest records the SHA-256 of the tokenizer at
// `tokenizer_path` (of TokenizerDigestPath, as encode_shards records it);
// else an error naming the manifest, the tokenizer and both digests.
absl::Status CheckEncodedWith(const TokenShardSet& tokens,
                              const std::string& tokenizer_path);

}  // namespace sparse_layers::datasets

#endif  // SPARSE_LAYERS_DATASETS_TEXT_TOKENIZER_PAIRING_H_
