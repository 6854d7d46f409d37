#include "datasets/text/domain_documents.h"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "base/common/file_io.h"
#include "datasets/text/tokenizer.h"
#include "gtest/gtest.h"

namespace sparse_layers::datasets {
namespace {

std::unique_ptr<Tokenizer> CharTokenizer() {
  // Ids a = 0, b = 1, ';' = 2 (eos).
  const std::string path =
      std::string(std::getenv("TEST_TMPDIR")) + "/ab.chars";
  EXPECT_TRUE(WriteFileAtomically(path, "ab;\n;\n").ok());
  std::string error;
  std::unique_ptr<Tokenizer> tokenizer = Tokenizer::Load(path, &error);
  EXPECT_NE(tokenizer, nullptr) << error;
  return tokenizer;
}

int Count(const std::vector<int>& ids, int id) {
  return static_cast<int>(std::count(ids.begin(), ids.end(), id));
}

TEST(DomainHalvesTest, DocumentsAlternateBetweenHalvesJoinedByEosAndCapped) {
  const auto tokenizer = CharTokenizer();
  const std::string jsonl =
      "{\"id\":\"1\",\"source\":\"y\",\"text\":\"bbb\"}\n"
      "{\"id\":\"2\",\"source\":\"x\",\"text\":\"a\"}\n"
      "{\"id\":\"3\",\"source\":\"x\",\"text\":\"aa\"}\n"
      "{\"id\":\"4\",\"source\":\"x\",\"text\":\"aaa\"}\n"
      "{\"id\":\"5\",\"source\":\"x\",\"text\":\"aaaa\"}\n";
  int64_t per_domain = 160;  // 80 a half, at most 10 a document.
  absl::StatusOr<std::vector<DomainTokens>> domains =
      DomainHalves(jsonl, *tokenizer, per_domain);
  ASSERT_TRUE(domains.ok()) << domains.status();
  ASSERT_EQ(domains->size(), 2u);
  const DomainTokens& x = (*domains)[0];
  EXPECT_EQ(x.domain, "x");  // Name order.
  // Two whole documents in each half, every document once.
  EXPECT_EQ(Count(x.halves[0], 2), 2);
  EXPECT_EQ(Count(x.halves[1], 2), 2);
  EXPECT_EQ(Count(x.halves[0], 0) + Count(x.halves[1], 0), 1 + 2 + 3 + 4);
  EXPECT_EQ((*domains)[1].halves[0], (std::vector<int>{1, 1, 1, 2}));
  EXPECT_TRUE((*domains)[1].halves[1].empty());
  // The same input, the same halves.
  EXPECT_EQ(DomainHalves(jsonl, *tokenizer, per_domain)->at(0).halves[0],
            x.halves[0]);

  per_domain = 16;  // 8 a half, at most 1 token a document.
  domains = DomainHalves(jsonl, *tokenizer, per_domain);
  ASSERT_TRUE(domains.ok());
  EXPECT_EQ((*domains)[0].halves[0], (std::vector<int>{0, 2, 0, 2}));
  EXPECT_EQ((*domains)[1].halves[0], (std::vector<int>{1, 2}));

  EXPECT_FALSE(
      DomainHalves("{\"text\":\"ab\"}\n{\"source\":\"x\",\"text\":\"a\"}",
                   *tokenizer, per_domain)
          .ok());  // No source.
  EXPECT_EQ(
      DomainHalves("{\"source\":\"x\",\"text\":\"a\"}", *tokenizer, per_domain)
          ->size(),
      1u);  // One domain: nothing to compare, but no error.
}

}  // namespace
}  // namespace sparse_layers::datasets
