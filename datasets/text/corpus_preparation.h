// The text corpus as deterministic train/validation/test JSONL splits: each
// source (corpus_readers.h) is read in its own order, optionally sampled to
// the documents with the smallest sample hash, and every document goes to the
// split its SHA-256 picks (document_split.h). Writes <split>.jsonl and
// <split>.manifest.textproto (a SplitManifest) for each split.
#ifndef SPARSE_LAYERS_DATASETS_TEXT_CORPUS_PREPARATION_H_
#define SPARSE_LAYERS_DATASETS_TEXT_CORPUS_PREPARATION_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "base/common/staged_outputs.h"
#include "datasets/text/corpus.pb.h"
#include "datasets/text/document_split.h"

namespace sparse_layers::datasets {

// A source's non-empty documents in reading order, each with its sample hash
// (DocumentHashUnit with salt "sample:", independent of the split hash, so a
// sample keeps all splits), and the empty ones skipped (e-mails with headers
// only).
struct SourceDocuments {
  std::vector<std::pair<double, Document>> documents;
  int empty = 0;
};

// Keeps the `max_documents` documents with the smallest sample hash (a
// uniform sample of the source) in their reading order; 0 or a source no
// larger keeps all.
void KeepSmallestSampleHashes(
    std::vector<std::pair<double, Document>>& documents, int max_documents);

// Reads the source `spec` ("<format>:<path>", formats as ParseCorpusFormat)
// and samples it to `max_documents` (0 = all).
absl::StatusOr<SourceDocuments> ReadCorpusSource(absl::string_view spec,
                                                 int max_documents);

struct CorpusPreparationOptions {
  std::vector<std::string> sources;  // "<format>:<path>" each.
  std::string out_dir;               // Must exist.
  SplitFractions fractions;
  int max_documents_per_source = 0;  // 0 keeps all.
};

// Stages and writes the three splits and their manifests in `outputs`; the
// caller commits. Reports each source's document count on stderr. Fails when
// a split is empty.
absl::Status PrepareCorpus(const CorpusPreparationOptions& options,
                           StagedOutputs& outputs);

}  // namespace sparse_layers::datasets

#endif  // SPARSE_LAYERS_DATASETS_TEXT_CORPUS_PREPARATION_H_
