// judge_claims: the one claims engine's command line (analysis/claims/judge.h).
//
// Judging a section (prints it, writes DIR/verdicts.csv):
//   judge_claims --claims=claims.textproto --out_dir=DIR
//       [--plot=plot_lines.sh] --table=NAME.csv=FILE[,FILE...]...
//       [--arms_not_run=ARM[,ARM...]]  (arms not trained at this scale)
//       [--plot_heatmap=plot_heatmap.sh]  (for the claims file's heat maps)
// Checking a built section (the experiment's smoke test; or one verdicts.csv):
//   judge_claims --verify --claims=F --seeds=1,2 [--min_n=N] SECTION_DIR
// The combined report's summary rows:
//   judge_claims --summarize VERDICTS.csv...
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
#include "absl/strings/str_split.h"
#include "analysis/claims/judge.h"
#include "base/common/main.h"
#include "base/common/status_macros.h"

namespace {

constexpr char kUsage[] =
    "usage: judge_claims --claims=F --out_dir=D [--plot=P] "
    "--table=NAME=FILE[,FILE...]... [--arms_not_run=ARM,...]\n"
    "       judge_claims --summarize VERDICTS.csv...\n"
    "       judge_claims --verify --claims=F [--seeds=S,...] [--min_n=N] "
    "SECTION_DIR|VERDICTS.csv\n";

absl::Status Run(int argc, char** argv) {
  sparse_layers::claims::JudgeOptions options;
  bool summarize = false, verify = false;
  int min_n = 0;
  std::vector<std::string> seeds;
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&](const char* flag) {
      return arg.substr(std::string(flag).size());
    };
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return absl::OkStatus();
    } else if (arg == "--summarize") {
      summarize = true;
    } else if (arg == "--verify") {
      verify = true;
    } else if (absl::StartsWith(arg, "--min_n=")) {
      if (!absl::SimpleAtoi(value("--min_n="), &min_n) || min_n < 0) {
        return absl::InvalidArgumentError("--min_n takes a whole number >= 0");
      }
    } else if (absl::StartsWith(arg, "--seeds=")) {
      seeds = absl::StrSplit(value("--seeds="), ',', absl::SkipEmpty());
    } else if (absl::StartsWith(arg, "--plot_heatmap=")) {
      options.heatmap_script = value("--plot_heatmap=");
    } else if (absl::StartsWith(arg, "--claims=")) {
      options.claims_path = value("--claims=");
    } else if (absl::StartsWith(arg, "--out_dir=")) {
      options.out_dir = value("--out_dir=");
    } else if (absl::StartsWith(arg, "--plot=")) {
      options.plot_script = value("--plot=");
    } else if (absl::StartsWith(arg, "--arms_not_run=")) {
      options.arms_not_run =
          absl::StrSplit(value("--arms_not_run="), ',', absl::SkipEmpty());
    } else if (absl::StartsWith(arg, "--table=")) {
      ASSIGN_OR_RETURN(
          auto table, sparse_layers::claims::ParseTableFlag(value("--table=")));
      options.tables.push_back(std::move(table));
    } else if (absl::StartsWith(arg, "--")) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown flag ", arg, " (see --help)"));
    } else {
      positional.push_back(arg);
    }
  }
  if (summarize) {
    if (positional.empty())
      return absl::InvalidArgumentError("--summarize needs verdicts.csv files");
    ASSIGN_OR_RETURN(auto summary,
                     sparse_layers::claims::Summarize(positional));
    std::cout << summary;
    return absl::OkStatus();
  }
  if (verify) {
    if (positional.size() != 1 || options.claims_path.empty()) {
      return absl::InvalidArgumentError(
          "--verify needs --claims and one section directory or "
          "verdicts.csv");
    }
    ASSIGN_OR_RETURN(auto checked,
                     sparse_layers::claims::Verify(
                         options.claims_path, positional[0], seeds, min_n));
    std::cout << checked;
    return absl::OkStatus();
  }
  if (!positional.empty())
    return absl::InvalidArgumentError(
        absl::StrCat("unexpected argument ", positional[0]));
  if (options.claims_path.empty() || options.out_dir.empty() ||
      options.tables.empty()) {
    return absl::InvalidArgumentError(
        "--claims, --out_dir and at least one --table are required");
  }
  ASSIGN_OR_RETURN(auto section, sparse_layers::claims::Judge(options));
  std::cout << section;
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  sparse_layers::SetProgramName(argv[0]);
  return sparse_layers::RunMain([&] { return Run(argc, argv); });
}
