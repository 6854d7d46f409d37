#include "analysis/claims/judge.h"

#include <sys/stat.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "analysis/claims/claims_engine.h"
#include "analysis/claims/section_checks.h"
#include "analysis/claims/section_renderer.h"
#include "analysis/claims/verdict_files.h"
#include "base/common/file_io.h"
#include "base/common/status_macros.h"
#include "base/common/text_proto.h"

namespace sparse_layers::claims {

absl::StatusOr<ClaimSet> LoadClaimSet(const std::string& path) {
  ASSIGN_OR_RETURN(auto text, ReadFileToString(path));
  ClaimSet claims;
  RETURN_IF_ERROR(ParseTextProto(text, path, &claims));
  if (claims.experiment().empty())
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": no experiment name"));
  return claims;
}

absl::StatusOr<std::pair<std::string, std::vector<std::string>>> ParseTableFlag(
    const std::string& value) {
  const size_t equals = value.find('=');
  if (equals == std::string::npos || equals == 0 ||
      equals + 1 == value.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--table=", value, ": expected NAME=FILE[,FILE...]"));
  }
  std::vector<std::string> files =
      absl::StrSplit(value.substr(equals + 1), ',', absl::SkipEmpty());
  return std::make_pair(value.substr(0, equals), files);
}

absl::StatusOr<std::string> Judge(const JudgeOptions& options) {
  ASSIGN_OR_RETURN(auto claims, LoadClaimSet(options.claims_path));
  Tables tables;
  for (const auto& [name, files] : options.tables) {
    ASSIGN_OR_RETURN(auto table, TidyTable::ReadConcatenated(files));
    table.set_name(name);
    if (!tables.emplace(name, std::move(table)).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("table ", name, " given twice"));
    }
  }
  auto results = JudgeClaimSet(claims, tables, options.arms_not_run);
  if (!results.ok())
    return absl::Status(
        results.status().code(),
        absl::StrCat(options.claims_path, ": ", results.status().message()));
  RenderOptions render;
  render.out_dir = options.out_dir;
  render.plot_script = options.plot_script;
  render.heatmap_script = options.heatmap_script;
  auto section = RenderSection(claims, tables, *results, render);
  if (!section.ok())
    return absl::Status(
        section.status().code(),
        absl::StrCat(options.claims_path, ": ", section.status().message()));
  for (const auto& [name, table] : tables) {
    RETURN_IF_ERROR(WriteFileAtomically(
        absl::StrCat(options.out_dir, "/", name), table.ToCsv()));
  }
  // What the section was judged without, for its check (CheckSection).
  RETURN_IF_ERROR(
      WriteFileAtomically(absl::StrCat(options.out_dir, "/", kArmsNotRunFile),
                          absl::StrJoin(options.arms_not_run, "\n")));
  RETURN_IF_ERROR(WriteFileAtomically(
      absl::StrCat(options.out_dir, "/verdicts.csv"),
      VerdictsTable(claims.experiment(), *results).ToCsv()));
  return section;
}

absl::StatusOr<std::string> Verify(const std::string& claims_path,
                                   const std::string& path,
                                   const std::vector<std::string>& seeds,
                                   int min_n) {
  ASSIGN_OR_RETURN(auto claims, LoadClaimSet(claims_path));
  struct stat info;
  if (stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode)) {
    if (seeds.empty() && claims.checks_size() > 0)
      return absl::InvalidArgumentError(
          "--verify of a section directory needs --seeds");
    return CheckSection(claims, path, seeds, min_n);
  }
  const std::string& verdicts_path = path;
  ASSIGN_OR_RETURN(auto verdicts, TidyTable::ReadConcatenated({verdicts_path}));
  verdicts.set_name(verdicts_path);
  ASSIGN_OR_RETURN(auto checked, VerifyVerdicts(claims, verdicts, min_n));
  return absl::StrCat(verdicts_path, ": ", checked,
                      " controls and claims, one verdict each",
                      min_n > 0 ? absl::StrCat(", n >= ", min_n) : "", "\n");
}

absl::StatusOr<std::string> Summarize(
    const std::vector<std::string>& verdict_paths) {
  std::vector<TidyTable> tables;
  for (const std::string& path : verdict_paths) {
    ASSIGN_OR_RETURN(auto table, TidyTable::ReadConcatenated({path}));
    table.set_name(path);
    tables.push_back(std::move(table));
  }
  return SummarizeVerdicts(tables);
}

}  // namespace sparse_layers::claims
