#include "analysis/claims/seed_means.h"

#include <string>

#include "analysis/claims/claims_test_util.h"
#include "gtest/gtest.h"

namespace sparse_layers::claims {
namespace {

using testing::OneTable;
using testing::ParseText;

TEST(FormatNumber, CountsWholeOthersSignificant) {
  EXPECT_EQ(FormatNumber(115260), "115260");
  EXPECT_EQ(FormatNumber(0.123456), "0.1235");
  EXPECT_EQ(FormatNumber(0.123456, 6), "0.123456");
  EXPECT_EQ(FormatNumber(std::nan("")), "nan");
  EXPECT_EQ(FormatNumber(-INFINITY), "-inf");
}

TEST(RenderTable, CellsShowMeanIntervalAndN) {
  const TableSpec spec = ParseText<TableSpec>(
      "title: 'Loss' table: 't.csv' rows: 'arm' metrics: 'loss'");
  auto table = RenderTable(
      spec, OneTable("arm,seed,loss\nnew,1,1\nnew,2,2\nnew,3,3\nold,1,5\n"));
  ASSERT_TRUE(table.ok()) << table.status();
  // 2 +- 4.3027 / sqrt(3) = 2.484; one seed: a bare mean.
  EXPECT_NE(table->find("| new | 2 ± 2.5 | 3 |"), std::string::npos) << *table;
  EXPECT_NE(table->find("| old | 5 | 1 |"), std::string::npos) << *table;
}

TEST(FigurePoints, SeedMeansPerGroupAndNumericX) {
  const FigureSpec spec = ParseText<FigureSpec>(
      "file: 'f.svg' table: 't.csv' x: 'k' y: 'loss' group: 'arm'");
  // k sorts numerically (2 before 10); one seed at k = 10 has no bounds.
  auto points = FigurePoints(spec, OneTable("arm,seed,k,loss\n"
                                            "a,1,10,4\n"
                                            "a,1,2,1\n"
                                            "a,2,2,3\n"));
  ASSERT_TRUE(points.ok()) << points.status();
  EXPECT_EQ(points->ToCsv(),
            "arm,k,loss_mean,loss_ci_low,loss_ci_high,n\n"
            "a,2,2,-10.706205,14.706205,2\n"
            "a,10,4,,,1\n");
}

}  // namespace
}  // namespace sparse_layers::claims
