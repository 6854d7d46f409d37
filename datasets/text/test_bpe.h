// Test helper: the pinned BPE tokenizer (//datasets/text:bpe) from a test's
// runfiles, for tests that need the word pieces the experiments' models use.
#ifndef SPARSE_LAYERS_DATASETS_TEXT_TEST_BPE_H_
#define SPARSE_LAYERS_DATASETS_TEXT_TEST_BPE_H_

#include <memory>

#include "datasets/text/tokenizer.h"

namespace sparse_layers::datasets {

// Fails the running test (and returns nullptr) when the model does not load.
std::unique_ptr<Tokenizer> LoadTestBpe();

}  // namespace sparse_layers::datasets

#endif  // SPARSE_LAYERS_DATASETS_TEXT_TEST_BPE_H_
