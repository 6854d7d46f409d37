// isoflop_frontier: the isoflop study's derived tables (isoflop_frontier.h)
// from the runs' tidy CSV, for the claims engine.
//
//   isoflop_frontier --runs=runs.csv --runs_out=isoflop.csv
//                    --frontier_out=frontier.csv
//
// Errors are one line on stderr and a non-zero exit.
#include <cstdio>
#include <string>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "analysis/claims/tidy_table.h"
#include "analysis/scaling/isoflop_frontier.h"
#include "analysis/scaling/unigram_baseline.h"
#include "base/common/file_io.h"
#include "base/common/main.h"
#include "base/common/staged_outputs.h"
#include "base/common/status_macros.h"
#include "datasets/text/token_shards.h"

ABSL_FLAG(std::string, runs, "",
          "Tidy CSV of the runs (//pipelines/train:summary_table).");
ABSL_FLAG(std::string, runs_out, "", "The runs with compute_sparsity.");
ABSL_FLAG(std::string, frontier_out, "", "Best run per (ffn, budget, seed).");
ABSL_FLAG(std::string, train_tokens, "",
          "The training split's token manifest (the unigram control's fit).");
ABSL_FLAG(std::string, validation_tokens, "",
          "The validation split's token manifest (the runs' validation loss).");

namespace sparse_layers::analysis {
namespace {

absl::Status Run() {
  const std::string path = absl::GetFlag(FLAGS_runs);
  RETURN_IF_ERROR(FirstError(
      {RequiredFile(FLAGS_runs), RequiredFlag(FLAGS_runs_out),
       RequiredFlag(FLAGS_frontier_out), RequiredFile(FLAGS_train_tokens),
       RequiredFile(FLAGS_validation_tokens)}));
  ASSIGN_OR_RETURN(const std::string text, ReadFileToString(path));
  ASSIGN_OR_RETURN(const claims::TidyTable runs,
                   claims::TidyTable::Parse(text, path));
  ASSIGN_OR_RETURN(const auto train, datasets::TokenShardSet::Open(
                                         absl::GetFlag(FLAGS_train_tokens)));
  ASSIGN_OR_RETURN(
      const auto validation,
      datasets::TokenShardSet::Open(absl::GetFlag(FLAGS_validation_tokens)));
  ASSIGN_OR_RETURN(const double unigram,
                   UnigramCrossEntropy(*train, *validation));
  ASSIGN_OR_RETURN(const auto tables, IsoflopFrontier(runs, unigram));
  StagedOutputs outputs;  // Both tables or neither.
  RETURN_IF_ERROR(
      outputs.WriteFile(absl::GetFlag(FLAGS_runs_out), tables.runs));
  RETURN_IF_ERROR(
      outputs.WriteFile(absl::GetFlag(FLAGS_frontier_out), tables.frontier));
  return outputs.Commit();
}

}  // namespace
}  // namespace sparse_layers::analysis

int main(int argc, char** argv) {
  // No LibTorch here (ops/backend:torch_init would link it): a table needs
  // none.
  sparse_layers::ParseMainFlags(
      argc, argv, "isoflop_frontier --runs=F --runs_out=F --frontier_out=F");
  return sparse_layers::RunMain(sparse_layers::analysis::Run);
}
