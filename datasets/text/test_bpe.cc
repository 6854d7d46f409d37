#include "datasets/text/test_bpe.h"

#include <cstdlib>
#include <string>

#include "gtest/gtest.h"

namespace sparse_layers::datasets {

std::unique_ptr<Tokenizer> LoadTestBpe() {
  std::string error;
  auto tokenizer = Tokenizer::Load(std::string(std::getenv("TEST_SRCDIR")) +
                                       "/sparse_layers/datasets/text/bpe.model",
                                   &error);
  EXPECT_NE(tokenizer, nullptr) << error;
  return tokenizer;
}

}  // namespace sparse_layers::datasets
