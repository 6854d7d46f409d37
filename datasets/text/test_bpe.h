// For tests: the project's BPE (//datasets/text:bpe, at the test's scale) from
// the runfiles, for tests that need real pieces.
#ifndef SPARSE_LAYERS_DATASETS_TEXT_TEST_BPE_H_
#define SPARSE_LAYERS_DATASETS_TEXT_TEST_BPE_H_

#include <memory>

#include "datasets/text/tokenizer.h"

namespace sparse_layers::datasets {

// The tokenizer, or null after failing the test with the loader's error.
std::unique_ptr<Tokenizer> LoadTestBpe();

}  // namespace sparse_layers::datasets

#endif  // SPARSE_LAYERS_DATASETS_TEXT_TEST_BPE_H_
