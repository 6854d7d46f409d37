#include "analysis/claims/section_checks.h"

#include <filesystem>
#include <fstream>
#include <string>

#include "analysis/claims/claims.pb.h"
#include "analysis/claims/claims_test_util.h"
#include "analysis/claims/tidy_table.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"

namespace sparse_layers::claims {
namespace {

// Two arms at seeds 1 and 2, two levels of K each; shares of a whole per arm.
constexpr char kRuns[] =
    "arm,seed,k,l0,fvu,share\n"
    "sae,1,2,1.5,0.4,0.25\n"
    "sae,1,4,3.0,0.3,0.25\n"
    "sae,2,2,2.0,0.5,0.25\n"
    "sae,2,4,4.0,0.2,0.25\n"
    "mxd,1,2,2.0,0.3,0.5\n"
    "mxd,1,4,3.5,0.2,0.5\n"
    "mxd,2,2,1.0,0.35,0\n"
    "mxd,2,4,2.5,0.25,0\n";

TidyTable Table(const std::string& csv) {
  return testing::CsvTable(csv, "runs.csv");
}

absl::Status Check(const std::string& text, const std::string& csv = kRuns) {
  TableCheck check;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &check))
      << text;
  return CheckTable(check, Table(csv), {"1", "2"});
}

TEST(SectionChecksTest, FullGridPasses) {
  EXPECT_TRUE(Check(R"pb(
                table: "runs.csv"
                rows: 8
                values { column: "seed" values: "$seeds" }
                values {
                  column: "arm"
                  values: [ "mxd", "sae" ]
                }
                values { column: "k" count: 2 }
                complete: [ "arm", "seed", "k" ]
                per_combination: 1
                bounds { column: "fvu" min: 0 max: 1 }
                bounds { column: "l0" min: 0 max_column: "k" }
                sums { column: "share" group_by: "arm" sum: 1 tolerance: 1e-9 }
              )pb")
                  .ok());
}

TEST(SectionChecksTest, MissingCellFails) {
  // Seed 2 of mxd at K = 4 dropped: 7 of the 8 arm x seed x K cells.
  std::string csv = kRuns;
  csv.resize(csv.rfind("mxd,2,4"));
  const absl::Status status = Check(R"pb(table: "runs.csv"
                                         complete: [ "arm", "seed", "k" ])pb",
                                    csv);
  EXPECT_FALSE(status.ok());
  EXPECT_NE(std::string(status.message()).find("7 of the 8 (arm x seed x k)"),
            std::string::npos)
      << status;
}

TEST(SectionChecksTest, JointAxisIsOneAxis) {
  // (arm, k) pairs as one axis: 4 pairs x 2 seeds, each once.
  EXPECT_TRUE(Check(R"pb(table: "runs.csv"
                         complete: [ "arm+k", "seed" ]
                         per_combination: 1)pb")
                  .ok());
  std::string csv = kRuns;
  csv.resize(csv.rfind("mxd,2,4"));
  EXPECT_FALSE(Check(R"pb(table: "runs.csv"
                          complete: [ "arm+k", "seed" ])pb",
                     csv)
                   .ok());
}

TEST(SectionChecksTest, DoubledCellFails) {
  const absl::Status status = Check(R"pb(table: "runs.csv"
                                         complete: [ "arm", "seed" ]
                                         per_combination: 1)pb");
  EXPECT_NE(
      std::string(status.message()).find("(mxd, 1) has 2 rows, expected 1"),
      std::string::npos)
      << status;
}

TEST(SectionChecksTest, SeedsExpandAndMustMatch) {
  TableCheck check;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(
      R"pb(table: "runs.csv"
           values { column: "seed" values: "$seeds" })pb",
      &check));
  EXPECT_TRUE(CheckTable(check, Table(kRuns), {"1", "2"}).ok());
  const absl::Status status = CheckTable(check, Table(kRuns), {"1", "2", "3"});
  EXPECT_NE(
      std::string(status.message()).find("seed has {1, 2}, expected {1, 2, 3}"),
      std::string::npos)
      << status;
}

TEST(SectionChecksTest, BoundsAndFiniteness) {
  // l0 = 4.0 at K = 4 is allowed; fvu 0.5 breaks max 0.45.
  EXPECT_TRUE(Check(R"pb(table: "runs.csv"
                         bounds { column: "l0" max_column: "k" })pb")
                  .ok());
  EXPECT_NE(std::string(Check(R"pb(table: "runs.csv"
                                   bounds { column: "fvu" max: 0.45 })pb")
                            .message())
                .find("fvu = 0.5 out of bounds in row sae,2,2,2.0,0.5,0.25"),
            std::string::npos);
  std::string with_nan = kRuns;
  with_nan.replace(with_nan.find("0.35"), 4, "nan");
  EXPECT_FALSE(Check(R"pb(table: "runs.csv"
                          bounds { column: "fvu" })pb",
                     with_nan)
                   .ok());
  std::string with_inf = kRuns;
  with_inf.replace(with_inf.find("0.35"), 4, "inf");
  EXPECT_FALSE(Check(R"pb(table: "runs.csv"
                          bounds { column: "fvu" })pb",
                     with_inf)
                   .ok());
}

TEST(SectionChecksTest, SumsAndRowCountsAndFilters) {
  const absl::Status sums = Check(R"pb(
    table: "runs.csv"
    why: "shares of one fit make a whole"
    sums {
      column: "share"
      group_by: [ "arm", "seed" ]
      sum: 1
      tolerance: 1e-6
    }
  )pb");
  EXPECT_NE(std::string(sums.message())
                .find("share sums to 0 in (mxd, 2), expected 1 ± 1e-06 "
                      "(shares of one fit make a whole)"),
            std::string::npos)
      << sums;
  EXPECT_TRUE(Check(R"pb(table: "runs.csv"
                         where { column: "arm" value: "sae" }
                         rows: 4)pb")
                  .ok());
  EXPECT_FALSE(Check(R"pb(table: "runs.csv"
                          where { column: "arm" value: "sae" }
                          rows: 5)pb")
                   .ok());
  EXPECT_FALSE(Check(R"pb(table: "runs.csv"
                          where { column: "arm" value: "moe" })pb")
                   .ok());
}

// A section with one figure: drawn, listed as not drawn (its filters kept no
// rows), or neither (a wiring error).
TEST(CheckSectionTest, AFigureIsDrawnOrListedAsNotDrawn) {
  const std::string dir = ::testing::TempDir() + "/section_figure";
  std::filesystem::create_directories(dir);
  ClaimSet claims;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(
      R"(experiment: "toy"
         figures { file: "absorption.svg" table: "runs.csv" x: "k" y: "fvu"
                   title: "Absorption against K" })",
      &claims));
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir + "/" + name) << text;
  };
  write("verdicts.csv",
        "experiment,kind,id,source,statement,level,verdict,effect,ci_low,"
        "ci_high,n,paper_effect,reason,confidence\n");
  write("section.md", "## toy\n\nNot drawn (no rows): Absorption against K.\n");
  EXPECT_TRUE(CheckSection(claims, dir, {"1"}, 2).ok());
  write("section.md", "## toy\n\nNot drawn (no rows): Another figure.\n");
  const auto missing = CheckSection(claims, dir, {"1"}, 2);
  EXPECT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("absorption.svg is missing"),
            std::string::npos)
      << missing.status();
  write("absorption.svg", "<svg/>");
  EXPECT_TRUE(CheckSection(claims, dir, {"1"}, 2).ok());
}

// A check filtered on a base the scale does not run has no rows: skipped when
// the section lists the base as not run (kArmsNotRunFile), a failure otherwise.
TEST(CheckSectionTest, ChecksOnAnArmNotRunAreSkipped) {
  const std::string dir = ::testing::TempDir() + "/section_not_run";
  std::filesystem::create_directories(dir);
  ClaimSet claims;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(
      R"(experiment: "toy"
         checks { table: "atlas.csv" where { column: "base" value: "gelu" }
                  values { column: "seed" values: "$seeds" } }
         checks { table: "atlas.csv" where { column: "base" value: "swiglu" }
                  values { column: "seed" values: "$seeds" } })",
      &claims));
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir + "/" + name) << text;
  };
  write("atlas.csv", "base,seed,ce\ngelu,1,3.1\n");
  write("verdicts.csv",
        "experiment,kind,id,source,statement,level,verdict,effect,ci_low,"
        "ci_high,n,paper_effect,reason,confidence\n");
  write("section.md", "## toy\n");
  const auto all_run = CheckSection(claims, dir, {"1"}, 1);
  EXPECT_FALSE(all_run.ok());
  EXPECT_NE(all_run.status().message().find("no rows"), std::string::npos)
      << all_run.status();
  write(kArmsNotRunFile, "base=swiglu\n");
  const auto swiglu_not_run = CheckSection(claims, dir, {"1"}, 1);
  ASSERT_TRUE(swiglu_not_run.ok()) << swiglu_not_run.status();
  EXPECT_NE(swiglu_not_run->find("1 table checks (1 on arms not run skipped)"),
            std::string::npos)
      << *swiglu_not_run;
  // The gelu check still runs: a missing seed fails.
  EXPECT_FALSE(CheckSection(claims, dir, {"1", "2"}, 1).ok());
}

}  // namespace
}  // namespace sparse_layers::claims
