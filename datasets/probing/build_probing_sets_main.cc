// build_probing_sets: labelled probing sets from the pinned corpora (the
// analogues of the MxD paper's SAEBench tasks, arXiv:2505.21364 App. B.5,
// Table 4), one JSONL per task and classes.tsv, from
// datasets/probing/probing_sets.h.
//
//   build_probing_sets --corpus=train.jsonl,validation.jsonl,test.jsonl
//       --brown_cats=cats.txt --out_dir=probing/ --max_per_class=300
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/common/main.h"
#include "base/common/staged_outputs.h"
#include "base/common/status_macros.h"
#include "datasets/probing/probing_sets.h"
#include "ops/backend/torch_init.h"

ABSL_FLAG(std::vector<std::string>, corpus, {},
          "The corpus split JSONL files (datasets/text:mixed)");
ABSL_FLAG(std::string, out_dir, "", "Output directory");
ABSL_FLAG(int, max_per_class, 300, "Passages kept per class (smallest hash)");
ABSL_FLAG(int, passage_chars, 600, "Passage length in characters");
ABSL_FLAG(int, max_passages_per_document, 8,
          "Passages taken from one document at most");
ABSL_FLAG(std::string, brown_cats, "",
          "Brown's cats.txt (POS-tagged files beside it): adds brown_pos");
ABSL_FLAG(int, max_per_pos_class, 300,
          "brown_pos windows kept per part of speech (smallest hash): one "
          "window is one token, so a class needs more of them than passages");
ABSL_FLAG(int, pos_context_words, 12,
          "Words before the target in a brown_pos window");

namespace sparse_layers::datasets {
namespace {

absl::Status Run() {
  RETURN_IF_ERROR(
      FirstError({RequiredFile(FLAGS_corpus), RequiredFlag(FLAGS_out_dir),
                  FlagAtLeast(FLAGS_max_per_class, 1),
                  FlagAtLeast(FLAGS_max_per_pos_class, 1),
                  FlagAtLeast(FLAGS_passage_chars, 1),
                  FlagAtLeast(FLAGS_max_passages_per_document, 1),
                  FlagAtLeast(FLAGS_pos_context_words, 0)}));
  ProbingSetOptions options;
  options.brown_cats = absl::GetFlag(FLAGS_brown_cats);
  if (!options.brown_cats.empty()) {
    RETURN_IF_ERROR(RequiredFile(FLAGS_brown_cats));
  }
  options.corpus = absl::GetFlag(FLAGS_corpus);
  options.max_per_class = absl::GetFlag(FLAGS_max_per_class);
  options.max_per_pos_class = absl::GetFlag(FLAGS_max_per_pos_class);
  options.passage_chars = absl::GetFlag(FLAGS_passage_chars);
  options.max_passages_per_document =
      absl::GetFlag(FLAGS_max_passages_per_document);
  options.pos_context_words = absl::GetFlag(FLAGS_pos_context_words);
  ASSIGN_OR_RETURN(const ProbingSets sets, BuildProbingSets(options));

  const std::string out_dir = absl::GetFlag(FLAGS_out_dir);
  StagedOutputs outputs;  // Every task's set and classes.tsv, or nothing.
  for (const auto& [task, jsonl] : sets.jsonl) {
    RETURN_IF_ERROR(
        outputs.WriteFile(absl::StrCat(out_dir, "/", task, ".jsonl"), jsonl));
  }
  std::fputs(sets.classes.c_str(), stderr);
  RETURN_IF_ERROR(outputs.WriteFile(absl::StrCat(out_dir, "/classes.tsv"),
                                    "task\tlabel\tpassages\n" + sets.classes));
  return outputs.Commit();
}

}  // namespace
}  // namespace sparse_layers::datasets

int main(int argc, char** argv) {
  sparse_layers::InitMain(argc, argv, "Builds labelled probing sets.");
  return sparse_layers::RunMain(sparse_layers::datasets::Run);
}
