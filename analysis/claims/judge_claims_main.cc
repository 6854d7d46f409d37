// judge_claims: the one claims engine's command line (analysis/claims/judge.h).
//
//   judge_claims --claims=claims.textproto --out_dir=DIR [--plot=plot_lines.sh]
//   \
//                --table=NAME.csv=FILE[,FILE...]...     prints the section,
//                writes DIR/verdicts.csv
//   judge_claims --summarize VERDICTS.csv...            prints the combined
//   report's summary rows
//
// Any error prints one line "judge_claims: error: ..." and exits 1.
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "analysis/claims/judge.h"

namespace {

int Fail(const absl::Status& status) {
  std::fprintf(stderr, "judge_claims: error: %s\n",
               std::string(status.message()).c_str());
  return 1;
}

constexpr char kUsage[] =
    "usage: judge_claims --claims=F --out_dir=D [--plot=P] "
    "--table=NAME=FILE[,FILE...]...\n"
    "       judge_claims --summarize VERDICTS.csv...\n"
    "       judge_claims --verify --claims=F [--min_n=N] VERDICTS.csv\n";

}  // namespace

int main(int argc, char** argv) {
  sparse_layers::claims::JudgeOptions options;
  bool summarize = false, verify = false;
  int min_n = 0;
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&](const char* flag) {
      return arg.substr(std::string(flag).size());
    };
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (arg == "--summarize") {
      summarize = true;
    } else if (arg == "--verify") {
      verify = true;
    } else if (absl::StartsWith(arg, "--min_n=")) {
      if (!absl::SimpleAtoi(value("--min_n="), &min_n)) {
        return Fail(absl::InvalidArgumentError("--min_n takes a whole number"));
      }
    } else if (absl::StartsWith(arg, "--claims=")) {
      options.claims_path = value("--claims=");
    } else if (absl::StartsWith(arg, "--out_dir=")) {
      options.out_dir = value("--out_dir=");
    } else if (absl::StartsWith(arg, "--plot=")) {
      options.plot_script = value("--plot=");
    } else if (absl::StartsWith(arg, "--table=")) {
      auto table = sparse_layers::claims::ParseTableFlag(value("--table="));
      if (!table.ok()) return Fail(table.status());
      options.tables.push_back(*std::move(table));
    } else if (absl::StartsWith(arg, "--")) {
      return Fail(absl::InvalidArgumentError(
          absl::StrCat("unknown flag ", arg, " (see --help)")));
    } else {
      positional.push_back(arg);
    }
  }
  if (summarize) {
    if (positional.empty())
      return Fail(
          absl::InvalidArgumentError("--summarize needs verdicts.csv files"));
    auto summary = sparse_layers::claims::Summarize(positional);
    if (!summary.ok()) return Fail(summary.status());
    std::cout << *summary;
    return 0;
  }
  if (verify) {
    if (positional.size() != 1 || options.claims_path.empty()) {
      return Fail(absl::InvalidArgumentError(
          "--verify needs --claims and one verdicts.csv"));
    }
    auto checked = sparse_layers::claims::Verify(options.claims_path,
                                                 positional[0], min_n);
    if (!checked.ok()) return Fail(checked.status());
    std::cout << *checked;
    return 0;
  }
  if (!positional.empty())
    return Fail(absl::InvalidArgumentError(
        absl::StrCat("unexpected argument ", positional[0])));
  if (options.claims_path.empty() || options.out_dir.empty() ||
      options.tables.empty()) {
    return Fail(absl::InvalidArgumentError(
        "--claims, --out_dir and at least one --table are required"));
  }
  auto section = sparse_layers::claims::Judge(options);
  if (!section.ok()) return Fail(section.status());
  std::cout << *section;
  return 0;
}
