#include "datasets/text/corpus_preparation.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/common/digest.h"
#include "base/common/file_io.h"
#include "base/common/status_macros.h"
#include "datasets/text/corpus_readers.h"
#include "google/protobuf/text_format.h"

namespace sparse_layers::datasets {

void KeepSmallestSampleHashes(
    std::vector<std::pair<double, Document>>& documents, int max_documents) {
  if (max_documents <= 0 ||
      static_cast<int>(documents.size()) <= max_documents) {
    return;
  }
  std::vector<size_t> order(documents.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::nth_element(order.begin(), order.begin() + max_documents, order.end(),
                   [&](size_t a, size_t b) {
                     return documents[a].first < documents[b].first;
                   });
  order.resize(max_documents);
  std::sort(order.begin(), order.end());
  std::vector<std::pair<double, Document>> kept;
  for (size_t i : order) kept.push_back(std::move(documents[i]));
  documents = std::move(kept);
}

absl::StatusOr<SourceDocuments> ReadCorpusSource(absl::string_view spec,
                                                 int max_documents) {
  std::pair<std::string, std::string> format_path =
      absl::StrSplit(spec, absl::MaxSplits(':', 1));
  ASSIGN_OR_RETURN(const CorpusFormat format,
                   ParseCorpusFormat(format_path.first));
  SourceDocuments source;
  RETURN_IF_ERROR(
      ReadCorpus(format, format_path.second, [&](Document document) {
        if (document.text().empty()) {
          ++source.empty;
        } else {
          const double unit = DocumentHashUnit(document, "sample:");
          source.documents.emplace_back(unit, std::move(document));
        }
        return absl::OkStatus();
      }));
  KeepSmallestSampleHashes(source.documents, max_documents);
  return source;
}

absl::Status PrepareCorpus(const CorpusPreparationOptions& options,
                           StagedOutputs& outputs) {
  const std::string& out_dir = options.out_dir;
  // The three splits and their manifests appear together or not at all.
  std::vector<std::unique_ptr<AtomicFileWriter>> writers;
  std::vector<SplitManifestBuilder> manifests;
  std::vector<Sha256> digests(3);
  for (Split split : {Split::kTrain, Split::kValidation, Split::kTest}) {
    ASSIGN_OR_RETURN(const std::string staged,
                     outputs.StageFile(absl::StrCat(
                         out_dir, "/", SplitName(split), ".jsonl")));
    ASSIGN_OR_RETURN(std::unique_ptr<AtomicFileWriter> writer,
                     AtomicFileWriter::Open(staged));
    writers.push_back(std::move(writer));
    manifests.emplace_back(split);
  }

  for (const std::string& spec : options.sources) {
    ASSIGN_OR_RETURN(SourceDocuments source,
                     ReadCorpusSource(spec, options.max_documents_per_source));
    for (auto& [unit, document] : source.documents) {
      const int split =
          static_cast<int>(AssignSplit(document, options.fractions));
      const std::string line = DocumentToJson(document) + "\n";
      digests[split].Update(line);
      manifests[split].Add(document);
      RETURN_IF_ERROR(writers[split]->Append(line));
    }
    std::fprintf(stderr,
                 "prepare_corpus: %s: %zu documents (%d empty skipped)\n",
                 spec.c_str(), source.documents.size(), source.empty);
  }

  for (Split split : {Split::kTrain, Split::kValidation, Split::kTest}) {
    const int index = static_cast<int>(split);
    RETURN_IF_ERROR(writers[index]->Commit());
    SplitManifest manifest =
        manifests[index].Build(absl::StrCat(SplitName(split), ".jsonl"),
                               digests[index].HexDigest(), options.fractions);
    if (manifest.documents() == 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("the ", SplitName(split),
                       " split is empty; add documents or raise "
                       "its fraction"));
    }
    std::string text;
    google::protobuf::TextFormat::PrintToString(manifest, &text);
    RETURN_IF_ERROR(outputs.WriteFile(
        absl::StrCat(out_dir, "/", SplitName(split), ".manifest.textproto"),
        text));
  }
  return absl::OkStatus();
}

}  // namespace sparse_layers::datasets
