#include "analysis/claims/figures.h"

#include <sys/stat.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "analysis/claims/claims_test_util.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"

namespace sparse_layers::claims {
namespace {

TidyTable Table(const std::string& csv) { return testing::CsvTable(csv); }
Tables OneTable(const std::string& csv) { return {{"t.csv", Table(csv)}}; }
FigureSpec Spec(const std::string& text) {
  return testing::ParseText<FigureSpec>(text);
}

constexpr char kRows[] =
    "arm,seed,k,ce,ce_base\n"
    "a,1,2,5.0,4.0\na,1,4,4.5,4.0\na,2,2,5.5,4.5\na,2,4,5.0,4.5\n";

TEST(ReferenceLineArguments, ColumnSeedMeanOrFixedValue) {
  const FigureSpec spec = Spec(
      "file: 'f.svg' table: 't.csv' x: 'k' y: 'ce' group: 'arm' "
      "reference_lines { label: 'base CE' column: 'ce_base' } "
      "reference_lines { label: 'chance' value: 0.5 }");
  auto lines = ReferenceLineArguments(spec, OneTable(kRows));
  ASSERT_TRUE(lines.ok()) << lines.status();
  // The base CE is one value per seed (4.0 and 4.5): their mean.
  ASSERT_EQ(lines->size(), 2u);
  EXPECT_EQ((*lines)[0], "--hline=4.25:base CE");
  EXPECT_EQ((*lines)[1], "--hline=0.5:chance");
}

TEST(ReferenceLineArguments, APapersNumberIsAPaperLineOfAValue) {
  auto lines = ReferenceLineArguments(
      Spec(
          "file: 'f.svg' table: 't.csv' x: 'k' y: 'ce' group: 'arm' "
          "reference_lines { label: 'paper (Fig. 3)' value: 3.2 paper: true }"),
      OneTable(kRows));
  ASSERT_TRUE(lines.ok()) << lines.status();
  ASSERT_EQ(lines->size(), 1u);
  EXPECT_EQ((*lines)[0], "--paper_hline=3.2:paper (Fig. 3)");
  // A paper's number is a value, not a mean of our rows.
  auto from_rows = ReferenceLineArguments(
      Spec("file: 'f.svg' table: 't.csv' x: 'k' y: 'ce' group: 'arm' "
           "reference_lines { label: 'paper' column: 'ce_base' paper: true }"),
      OneTable(kRows));
  ASSERT_FALSE(from_rows.ok());
  EXPECT_NE(from_rows.status().message().find("it needs a value"),
            std::string::npos)
      << from_rows.status();
}

TEST(ReferenceLineArguments, APerLevelColumnIsNotAReference) {
  const FigureSpec spec = Spec(
      "file: 'f.svg' table: 't.csv' x: 'k' y: 'ce' group: 'arm' "
      "reference_lines { label: 'ce' column: 'ce' }");
  auto lines = ReferenceLineArguments(spec, OneTable(kRows));
  ASSERT_FALSE(lines.ok());
  EXPECT_NE(lines.status().message().find("several values for seed 1"),
            std::string::npos)
      << lines.status();
}

// A trained model's coverage by block beside its random initialisation's (one
// row per seed at the headline block), and a probe table whose control arm has
// a row per class.
constexpr char kModels[] =
    "model,seed,layer,headline,coverage\n"
    "trained,1,0,0,0.20\ntrained,1,1,1,0.30\ntrained,2,0,0,0.22\n"
    "trained,2,1,1,0.34\nrandom,1,0,0,0.10\nrandom,1,1,1,0.12\n"
    "random,2,0,0,0.11\nrandom,2,1,1,0.16\n";
constexpr char kProbes[] =
    "layer_kind,seed,class,f1\n"
    "random,1,a,0.5\nrandom,1,b,0.7\nrandom,2,a,0.4\nrandom,2,b,0.6\n"
    "mxd,1,a,0.9\nmxd,2,a,0.8\n";

TEST(ReferenceLineArguments, RowsOfItsOwnAreAnArm) {
  Tables tables = OneTable(kModels);
  tables.emplace("probes.csv", Table(kProbes));
  const FigureSpec spec = Spec(
      "file: 'f.svg' table: 't.csv' x: 'layer' y: 'coverage' group: 'model' "
      "where { column: 'model' value: 'trained' } "
      "reference_lines { label: 'random init' "
      "  where { column: 'model' value: 'random' } "
      "  where { column: 'headline' value: '1' } } "
      "reference_lines { label: 'random projection' table: 'probes.csv' "
      "  column: 'f1' where { column: 'layer_kind' value: 'random' } "
      "  average_over: 'class' }");
  // The figure's y among its own rows (the figure's filter left out): the
  // random model's headline-block coverage, 0.12 and 0.16 over the seeds; and
  // per seed the probes' mean over classes (0.6, 0.5), then over seeds.
  const std::vector<std::string> want = {"--hline=0.14:random init",
                                         "--hline=0.55:random projection"};
  auto lines = ReferenceLineArguments(spec, tables);
  EXPECT_EQ(lines.value_or(std::vector<std::string>{}), want) << lines.status();

  // Rows a seed holds twice, unless averaged over, are not one arm.
  const FigureSpec by_block = Spec(
      "file: 'f.svg' table: 't.csv' x: 'layer' y: 'coverage' group: 'model' "
      "reference_lines { label: 'random init' "
      "  where { column: 'model' value: 'random' } }");
  lines = ReferenceLineArguments(by_block, tables);
  ASSERT_FALSE(lines.ok());
  EXPECT_NE(lines.status().message().find("several rows for seed 1"),
            std::string::npos)
      << lines.status();
  // A filter that keeps nothing is an error, not a missing line.
  const FigureSpec none = Spec(
      "file: 'f.svg' table: 't.csv' x: 'layer' y: 'coverage' group: 'model' "
      "reference_lines { label: 'random init' "
      "  where { column: 'model' value: 'randon' } }");
  EXPECT_FALSE(ReferenceLineArguments(none, tables).ok());
  // A value has no rows to read.
  const FigureSpec both = Spec(
      "file: 'f.svg' table: 't.csv' x: 'layer' y: 'coverage' group: 'model' "
      "reference_lines { label: 'chance' value: 0.5 "
      "  where { column: 'model' value: 'random' } }");
  EXPECT_FALSE(ReferenceLineArguments(both, tables).ok());
}

TEST(DrawFigures, CallsThePlotScriptAndNamesTheFigure) {
  const std::string dir = std::string(getenv("TEST_TMPDIR")) + "/figures";
  mkdir(dir.c_str(), 0755);
  // A stand-in plot script: records its arguments, writes the SVG.
  const std::string script = dir + "/plot.sh";
  {
    std::ofstream out(script);
    out << "#!/bin/sh\nfor a in \"$@\"; do echo \"$a\"; done > " << dir
        << "/args.txt\n"
        << "for a in \"$@\"; do case \"$a\" in --out=*) : > \"${a#--out=}\";; "
           "esac; done\n";
  }
  chmod(script.c_str(), 0755);
  ClaimSet claims;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(
      "figures { file: 'ce.svg' table: 't.csv' x: 'k' y: 'ce' group: 'arm' "
      "title: 'CE by K' } "
      "figures { file: 'none.svg' table: 't.csv' x: 'k' y: 'ce' group: 'arm' "
      "title: 'Nothing' where { column: 'arm' value: 'b' } }",
      &claims));
  Tables tables;
  tables.emplace("t.csv", Table(kRows));
  RenderOptions options;
  options.out_dir = dir;
  options.plot_script = script;
  auto lines = DrawFigures(claims, tables, options);
  ASSERT_TRUE(lines.ok()) << lines.status();
  EXPECT_EQ(*lines, "Figures (seed means with 95% CI error bars): CE by K (" +
                        dir + "/ce.svg).\n\nNot drawn (no rows): Nothing.\n\n");
  std::ifstream args(dir + "/args.txt");
  std::stringstream text;
  text << args.rdbuf();
  EXPECT_NE(text.str().find("--y=ce_mean\n--ylow=ce_ci_low"), std::string::npos)
      << text.str();

  // A map: every row one point, no error bars, listed as a map.
  ClaimSet map;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(
      "figures { file: 'map.svg' table: 't.csv' x: 'k' y: 'ce' group: 'arm' "
      "title: 'Map' points: true where { column: 'seed' value: '1' } }",
      &map));
  lines = DrawFigures(map, tables, options);
  ASSERT_TRUE(lines.ok()) << lines.status();
  EXPECT_EQ(*lines, "Maps (one point per row): Map (" + dir + "/map.svg).\n\n");
  std::ifstream map_args(dir + "/args.txt");
  std::stringstream map_text;
  map_text << map_args.rdbuf();
  EXPECT_NE(map_text.str().find("--y=ce_mean\n--points\n--group=arm"),
            std::string::npos)
      << map_text.str();
  EXPECT_EQ(map_text.str().find("--ylow"), std::string::npos);

  // Without a plot script the figure is an error, not a silent omission.
  options.plot_script.clear();
  EXPECT_FALSE(DrawFigures(claims, tables, options).ok());
}

}  // namespace
}  // namespace sparse_layers::claims
