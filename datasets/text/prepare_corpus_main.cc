// prepare_corpus: reads corpora into one document stream and writes the
// train/validation/test JSONL splits, each with its manifest.
//
//   prepare_corpus --sources=brown:<cats.txt>,sotu:<dir>,...
//                  --out_dir=<dir>
#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "datasets/text/corpus_readers.h"
#include "datasets/text/document_split.h"
#include "google/protobuf/text_format.h"
#include "layers/backend/torch_init.h"
#include "tools/common/digest.h"
#include "tools/common/file_io.h"
#include "tools/common/staged_outputs.h"

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
  const std::string out_dir = absl::GetFlag(FLAGS_out_dir);
  if (out_dir.empty())
    return absl::InvalidArgumentError("--out_dir is required");
  if (absl::GetFlag(FLAGS_sources).empty()) {
    return absl::InvalidArgumentError("--sources is required");
  }
  const SplitFractions fractions{absl::GetFlag(FLAGS_validation_fraction),
                                 absl::GetFlag(FLAGS_test_fraction)};
  // Written as the ranges that hold, so that NaN fails them.
  if (!(fractions.validation > 0 && fractions.test >= 0 &&
        fractions.validation + fractions.test < 1)) {
    return absl::InvalidArgumentError(
        "need 0 < --validation_fraction, 0 <= --test_fraction, sum < 1");
  }
  if (absl::Status s = FlagAtLeast(FLAGS_max_documents_per_source, 0);
      !s.ok()) {
    return s;
  }
  const int max_per_source = absl::GetFlag(FLAGS_max_documents_per_source);

  // The three splits and their manifests appear together or not at all.
  StagedOutputs outputs;
  std::vector<std::unique_ptr<AtomicFileWriter>> writers;
  std::vector<SplitManifestBuilder> manifests;
  std::vector<Sha256> digests(3);
  for (Split split : {Split::kTrain, Split::kValidation, Split::kTest}) {
    auto staged = outputs.StageFile(
        absl::StrCat(out_dir, "/", SplitName(split), ".jsonl"));
    if (!staged.ok()) return staged.status();
    auto writer = AtomicFileWriter::Open(*staged);
    if (!writer.ok()) return writer.status();
    writers.push_back(*std::move(writer));
    manifests.emplace_back(split);
  }

  for (const std::string& spec : absl::GetFlag(FLAGS_sources)) {
    std::pair<std::string, std::string> format_path =
        absl::StrSplit(spec, absl::MaxSplits(':', 1));
    absl::StatusOr<CorpusFormat> format = ParseCorpusFormat(format_path.first);
    if (!format.ok()) return format.status();
    std::vector<std::pair<double, Document>> documents;
    int empty = 0;
    absl::Status read =
        ReadCorpus(*format, format_path.second, [&](Document document) {
          if (document.text().empty()) {
            ++empty;  // E-mails with headers only.
          } else {
            // Independent of the split hash, so a sample keeps all splits.
            const double unit = DocumentHashUnit(document, "sample:");
            documents.emplace_back(unit, std::move(document));
          }
          return absl::OkStatus();
        });
    if (!read.ok()) return read;
    if (max_per_source > 0 &&
        static_cast<int>(documents.size()) > max_per_source) {
      // The smallest sample hashes: a uniform sample of the source.
      std::vector<size_t> order(documents.size());
      for (size_t i = 0; i < order.size(); ++i) order[i] = i;
      std::nth_element(order.begin(), order.begin() + max_per_source,
                       order.end(), [&](size_t a, size_t b) {
                         return documents[a].first < documents[b].first;
                       });
      order.resize(max_per_source);
      std::sort(order.begin(), order.end());
      std::vector<std::pair<double, Document>> kept;
      for (size_t i : order) kept.push_back(std::move(documents[i]));
      documents = std::move(kept);
    }
    for (auto& [unit, document] : documents) {
      const int split = static_cast<int>(AssignSplit(document, fractions));
      const std::string line = DocumentToJson(document) + "\n";
      digests[split].Update(line);
      manifests[split].Add(document);
      if (absl::Status status = writers[split]->Append(line); !status.ok()) {
        return status;
      }
    }
    std::fprintf(stderr,
                 "prepare_corpus: %s: %zu documents (%d empty skipped)\n",
                 spec.c_str(), documents.size(), empty);
  }

  for (Split split : {Split::kTrain, Split::kValidation, Split::kTest}) {
    const int index = static_cast<int>(split);
    if (absl::Status status = writers[index]->Commit(); !status.ok()) {
      return status;
    }
    SplitManifest manifest =
        manifests[index].Build(absl::StrCat(SplitName(split), ".jsonl"),
                               digests[index].HexDigest(), fractions);
    if (manifest.documents() == 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("the ", SplitName(split),
                       " split is empty; add documents or raise "
                       "its fraction"));
    }
    std::string text;
    google::protobuf::TextFormat::PrintToString(manifest, &text);
    if (absl::Status status = outputs.WriteFile(
            absl::StrCat(out_dir, "/", SplitName(split), ".manifest.textproto"),
            text);
        !status.ok()) {
      return status;
    }
  }
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
