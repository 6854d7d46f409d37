// For tests: a held-out split of uniformly random token ids, written as real
// token shards with a manifest under the test's TEST_TMPDIR.
#ifndef SPARSE_LAYERS_DATASETS_TEXT_TEST_TOKEN_SPLIT_H_
#define SPARSE_LAYERS_DATASETS_TEXT_TEST_TOKEN_SPLIT_H_

#include <cstdint>
#include <memory>
#include <string>

#include "datasets/text/token_shards.h"

namespace sparse_layers::datasets {

// `tokens` ids in [0, vocab) drawn with torch's generator seeded by `seed`, as
// one document of split `split` in TEST_TMPDIR/<dir>; null after failing the
// test on any error.
std::unique_ptr<TokenShardSet> RandomTokenSplit(const std::string& dir,
                                                const std::string& split,
                                                int64_t vocab, int64_t tokens,
                                                uint64_t seed);

}  // namespace sparse_layers::datasets

#endif  // SPARSE_LAYERS_DATASETS_TEXT_TEST_TOKEN_SPLIT_H_
