// prepare_corpus: reads corpora into one document stream and writes the
// train/validation/test JSONL splits, each with its manifest
// (datasets/text/corpus_preparation.h).
//
//   prepare_corpus --sources=brown:<cats.txt>,sotu:<dir>,...
//                  --out_dir=<dir>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "base/common/main.h"
#include "base/common/staged_outputs.h"
#include "base/common/status_macros.h"
#include "datasets/text/corpus_preparation.h"
#include "datasets/text/document_split.h"
#include "ops/backend/torch_init.h"

ABSL_FLAG(
    std::vector<std::string>, sources, {},
    "Comma-separated <format>:<path> list; formats: brown (path of cats.txt), "
    "sotu, moby_dick, spam_assassin, local (directories)");
ABSL_FLAG(std::string, out_dir, "",
          "Directory for <split>.jsonl and "
          "<split>.manifest.textproto");
ABSL_FLAG(double, validation_fraction, 0.05,
          "Share of documents held out "
          "for validation");
ABSL_FLAG(double, test_fraction, 0.05, "Share of documents held out for test");
ABSL_FLAG(int, max_documents_per_source, 0,
          "Keep only the N documents of each source with the smallest "
          "sample hash (0 keeps all; small scales use it)");

namespace sparse_layers::datasets {
namespace {

absl::Status Run() {
  CorpusPreparationOptions options;
  options.out_dir = absl::GetFlag(FLAGS_out_dir);
  if (options.out_dir.empty()) {
    return absl::InvalidArgumentError("--out_dir is required");
  }
  options.sources = absl::GetFlag(FLAGS_sources);
  if (options.sources.empty()) {
    return absl::InvalidArgumentError("--sources is required");
  }
  options.fractions = {absl::GetFlag(FLAGS_validation_fraction),
                       absl::GetFlag(FLAGS_test_fraction)};
  // Written as the ranges that hold, so that NaN fails them.
  if (!(options.fractions.validation > 0 && options.fractions.test >= 0 &&
        options.fractions.validation + options.fractions.test < 1)) {
    return absl::InvalidArgumentError(
        "need 0 < --validation_fraction, 0 <= --test_fraction, sum < 1");
  }
  RETURN_IF_ERROR(FlagAtLeast(FLAGS_max_documents_per_source, 0));
  options.max_documents_per_source =
      absl::GetFlag(FLAGS_max_documents_per_source);
  StagedOutputs outputs;
  RETURN_IF_ERROR(PrepareCorpus(options, outputs));
  return outputs.Commit();
}

}  // namespace
}  // namespace sparse_layers::datasets

int main(int argc, char** argv) {
  sparse_layers::InitMain(argc, argv,
                          "Writes deterministic train/validation/test JSONL "
                          "splits of text corpora with manifests.");
  return sparse_layers::RunMain(sparse_layers::datasets::Run);
}
