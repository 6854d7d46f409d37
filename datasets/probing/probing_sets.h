// Labelled probing sets from the pinned corpora, the analogues of the MxD
// paper's SAEBench sparse-probing tasks (arXiv:2505.21364 App. B.5, Table 4):
// a probe on a layer's units should recover these labels if the units carry
// them. Each task is a JSONL of {"text", "label"} with the source document as
// metadata "group", so the probe keeps a document's passages on one side of
// its split. Tasks: brown_genre (15 Brown genres), spam_ham (SpamAssassin),
// sotu_party (Democratic vs Republican addresses), sotu_era (four eras of the
// State of the Union) and source (which corpus a passage comes from), all
// mean-pooled; with Brown's cats.txt, brown_pos: the coarse part of speech of
// a tagged Brown word, a short window ending at it, probed at its last token
// (metadata "pool": "last"; pos_windows.h). A capped class keeps the passages
// with the smallest hashes: a uniform sample without a seed.
#ifndef SPARSE_LAYERS_DATASETS_PROBING_PROBING_SETS_H_
#define SPARSE_LAYERS_DATASETS_PROBING_PROBING_SETS_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "datasets/text/corpus_readers.h"

namespace sparse_layers::datasets {

struct ProbingSetOptions {
  // The corpus split JSONL files (datasets/text:mixed).
  std::vector<std::string> corpus;
  // Brown's cats.txt (POS-tagged files beside it): adds brown_pos; "": not.
  std::string brown_cats;
  int max_per_class = 300;  // Passages kept per class.
  // brown_pos windows kept per part of speech: one window is one token, so a
  // class needs more of them than passages.
  int max_per_pos_class = 300;
  int passage_chars = 600;            // Passage length in characters.
  int max_passages_per_document = 8;  // E-mails give one passage each.
  int pos_context_words = 12;         // Words before a brown_pos target.
};

// Consecutive passages of about `chars` characters, cut at whitespace; a
// trailing piece shorter than a quarter passage is dropped. At most `limit`.
std::vector<std::string> Passages(const std::string& text, size_t chars,
                                  int limit);

// The sotu_era label of a year: "1790-1859", "1860-1909", "1910-1959" or
// "1960-"; "" when `year_text` is not a number.
std::string SotuEra(absl::string_view year_text);

// Task -> label of one corpus document (empty: in no task).
std::map<std::string, std::string> ProbingLabels(const Document& document);

// One probing example; `key` (a SHA-256 of task, group and passage index)
// orders a class for capping and a task's file.
struct ProbingPassage {
  std::string key;
  Document document;
};

// Task -> label -> its passages, before capping.
using ProbingPassages =
    std::map<std::string, std::map<std::string, std::vector<ProbingPassage>>>;

// Adds the passages of `document` to every task it is labelled for.
void AddDocumentPassages(const Document& document,
                         const ProbingSetOptions& options,
                         ProbingPassages& tasks);

// Adds brown_pos: a window per classed word of every Brown file cats.txt
// lists.
absl::Status AddBrownPosPassages(const std::string& cats_path,
                                 int context_words, ProbingPassages& tasks);

struct ProbingSets {
  // Task -> its JSONL (one document a line), in key order.
  std::map<std::string, std::string> jsonl;
  // "task\tlabel\tpassages\n" per class after capping, in task and label
  // order (classes.tsv without its header).
  std::string classes;
};

// Caps each class at its task's limit (smallest keys kept) and writes each
// task's passages in key order.
ProbingSets CapProbingSets(ProbingPassages tasks,
                           const ProbingSetOptions& options);

// Reads brown_cats (if set), then every corpus file, and caps the classes.
absl::StatusOr<ProbingSets> BuildProbingSets(const ProbingSetOptions& options);

}  // namespace sparse_layers::datasets

#endif  // SPARSE_LAYERS_DATASETS_PROBING_PROBING_SETS_H_
