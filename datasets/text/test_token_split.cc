#include "datasets/text/test_token_split.h"

#include <torch/torch.h>

#include <cstdlib>
#include <filesystem>

#include "absl/types/span.h"
#include "gtest/gtest.h"

namespace sparse_layers::datasets {

std::unique_ptr<TokenShardSet> RandomTokenSplit(const std::string& dir,
                                                const std::string& split,
                                                int64_t vocab, int64_t tokens,
                                                uint64_t seed) {
  const std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/" + dir;
  std::filesystem::create_directories(path);
  TokenShardManifest header;
  header.set_split(split);
  header.set_vocab_size(vocab);
  TokenSplitWriter writer(path, header, 1 << 20);
  torch::manual_seed(seed);
  const torch::Tensor ids = torch::randint(vocab, {tokens}, torch::kInt);
  EXPECT_TRUE(
      writer
          .AddDocument(absl::MakeConstSpan(ids.data_ptr<int>(), tokens), false)
          .ok());
  EXPECT_TRUE(writer.Finish().ok());
  auto set = TokenShardSet::Open(path + "/" + split + ".tokens.textproto");
  EXPECT_TRUE(set.ok()) << set.status();
  return set.ok() ? *std::move(set) : nullptr;
}

}  // namespace sparse_layers::datasets
