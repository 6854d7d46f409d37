#include "base/common/keyed_paths.h"

#include "gtest/gtest.h"

namespace sparse_layers {
namespace {

TEST(KeyedPathsTest, SplitsEachEntryAtItsOneEquals) {
  const auto paths = KeyedPaths("models", "name", {"dense=a.pt", "x2=/b/c.pt"});
  ASSERT_TRUE(paths.ok()) << paths.status();
  ASSERT_EQ(paths->size(), 2u);
  EXPECT_EQ((*paths)[0].key, "dense");
  EXPECT_EQ((*paths)[0].path, "a.pt");
  EXPECT_EQ((*paths)[1].key, "x2");
  EXPECT_EQ((*paths)[1].path, "/b/c.pt");
}

TEST(KeyedPathsTest, AnEntryWithoutOrWithTwoEqualsNamesTheFlag) {
  for (const char* bad : {"a.pt", "a=b=c.pt"}) {
    const auto paths = KeyedPaths("caches", "block", {"1=ok.textproto", bad});
    ASSERT_FALSE(paths.ok()) << bad;
    EXPECT_EQ(paths.status().message(),
              std::string("--caches entry '") + bad + "': expected block=path");
  }
}

}  // namespace
}  // namespace sparse_layers
