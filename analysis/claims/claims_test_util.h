// For the claims engine's tests: text protos and tidy tables from literals,
// failing the test on a parse error.
#ifndef SPARSE_LAYERS_ANALYSIS_CLAIMS_CLAIMS_TEST_UTIL_H_
#define SPARSE_LAYERS_ANALYSIS_CLAIMS_CLAIMS_TEST_UTIL_H_

#include <string>

#include "analysis/claims/claims_engine.h"
#include "analysis/claims/tidy_table.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"

namespace sparse_layers::claims::testing {

// A message of type M (Claim, ClaimSet, FigureSpec, TableCheck...) from text.
template <typename M>
M ParseText(const std::string& text) {
  M message;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &message))
      << text;
  return message;
}

// The CSV as a table named `name`.
inline TidyTable CsvTable(const std::string& csv,
                          const std::string& name = "t.csv") {
  auto table = TidyTable::Parse(csv, name);
  EXPECT_TRUE(table.ok()) << table.status();
  if (!table.ok()) return TidyTable();
  table->set_name(name);
  return *table;
}

// The CSV as the only table, "t.csv".
inline Tables OneTable(const std::string& csv) {
  Tables tables;
  tables.emplace("t.csv", CsvTable(csv));
  return tables;
}

}  // namespace sparse_layers::claims::testing

#endif  // SPARSE_LAYERS_ANALYSIS_CLAIMS_CLAIMS_TEST_UTIL_H_
