// build_probing_sets: labelled probing sets from the pinned corpora (the
// analogues of the MxD paper's SAEBench tasks, arXiv:2505.21364 App. B.5,
// Table 4), one JSONL per task with {"text", "label"} and the source document
// as metadata "group", so the probe keeps a document's passages on one side of
// its split.
//
//   build_probing_sets --corpus=train.jsonl,validation.jsonl,test.jsonl
//       --out_dir=probing/ --max_per_class=300
//
// Tasks: brown_genre (15 Brown genres), spam_ham (SpamAssassin), sotu_party
// (Democratic vs Republican addresses), sotu_era (four eras of the State of
// the Union) and source (which corpus a passage comes from), all mean-pooled;
// with --brown_cats, brown_pos: the coarse part of speech of a tagged Brown
// word, a short window ending at it, probed at its last token (metadata
// "pool": "last").
#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "datasets/probing/pos_windows.h"
#include "datasets/text/corpus_readers.h"
#include "layers/backend/torch_init.h"
#include "tools/common/digest.h"
#include "tools/common/file_io.h"
#include "tools/common/staged_outputs.h"

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

struct Passage {
  std::string key;  // Hash order: which passages a capped class keeps.
  Document document;
};

// Consecutive passages of about `chars` characters, cut at whitespace; a
// trailing piece shorter than a quarter passage is dropped.
std::vector<std::string> Passages(const std::string& text, size_t chars,
                                  int limit) {
  std::vector<std::string> out;
  size_t begin = text.find_first_not_of(" \t\r\n");
  while (begin != std::string::npos && static_cast<int>(out.size()) < limit) {
    size_t end = std::min(text.size(), begin + chars);
    if (end < text.size()) {
      const size_t space = text.find_last_of(" \t\r\n", end);
      if (space != std::string::npos && space > begin + chars / 2) end = space;
    }
    if (end - begin >= chars / 4)
      out.push_back(text.substr(begin, end - begin));
    begin = text.find_first_not_of(" \t\r\n", end);
  }
  return out;
}

std::string Era(const std::string& year_text) {
  int year = 0;
  if (!absl::SimpleAtoi(year_text, &year)) return "";
  if (year < 1860) return "1790-1859";
  if (year < 1910) return "1860-1909";
  if (year < 1960) return "1910-1959";
  return "1960-";
}

// The task labels of one document (empty: not in that task).
std::map<std::string, std::string> TaskLabels(const Document& document) {
  std::map<std::string, std::string> labels;
  const std::string& source = document.source();
  if (source == "brown" && !document.label().empty()) {
    labels["brown_genre"] = document.label();
  }
  if (source == "spam_assassin" && !document.label().empty()) {
    labels["spam_ham"] = document.label();
  }
  if (source == "sotu") {
    if (document.label() == "Democratic" || document.label() == "Republican") {
      labels["sotu_party"] = document.label();
    }
    const auto year = document.metadata().find("year");
    if (year != document.metadata().end() && !Era(year->second).empty()) {
      labels["sotu_era"] = Era(year->second);
    }
  }
  if (source == "brown" || source == "sotu" || source == "moby_dick" ||
      source == "spam_assassin") {
    labels["source"] = source;
  }
  return labels;
}

// task -> label -> passages.
using Tasks =
    std::map<std::string, std::map<std::string, std::vector<Passage>>>;

// brown_pos: every classed word of every Brown file (cats.txt lists them).
absl::Status AddPosTask(const std::string& cats_path, Tasks& tasks) {
  return ForEachBrownFile(
      cats_path, [&](const std::string& file, const std::string& /*genre*/,
                     const std::string& tagged) {
        const std::string group = absl::StrCat("brown/", file);
        for (PosExample& example :
             PosWindows(tagged, absl::GetFlag(FLAGS_pos_context_words))) {
          Passage passage;
          passage.key = Sha256Hex(
              absl::StrCat("brown_pos\n", group, "\n", example.word_index));
          passage.document.set_id(absl::StrCat(group, "#", example.word_index));
          passage.document.set_source("brown_pos");
          passage.document.set_label(example.label);
          passage.document.set_text(std::move(example.text));
          (*passage.document.mutable_metadata())["group"] = group;
          (*passage.document.mutable_metadata())["pool"] = "last";
          tasks["brown_pos"][example.label].push_back(std::move(passage));
        }
        return absl::OkStatus();
      });
}

absl::Status Run() {
  if (absl::Status s =
          FirstError({RequiredFile(FLAGS_corpus), RequiredFlag(FLAGS_out_dir),
                      FlagAtLeast(FLAGS_max_per_class, 1),
                      FlagAtLeast(FLAGS_max_per_pos_class, 1),
                      FlagAtLeast(FLAGS_passage_chars, 1),
                      FlagAtLeast(FLAGS_max_passages_per_document, 1),
                      FlagAtLeast(FLAGS_pos_context_words, 0)});
      !s.ok()) {
    return s;
  }
  const std::string out_dir = absl::GetFlag(FLAGS_out_dir);
  Tasks tasks;
  if (!absl::GetFlag(FLAGS_brown_cats).empty()) {
    if (absl::Status s = RequiredFile(FLAGS_brown_cats); !s.ok()) return s;
    if (absl::Status s = AddPosTask(absl::GetFlag(FLAGS_brown_cats), tasks);
        !s.ok()) {
      return s;
    }
  }
  for (const std::string& path : absl::GetFlag(FLAGS_corpus)) {
    auto jsonl = ReadFileToString(path);
    if (!jsonl.ok()) return jsonl.status();
    for (absl::string_view line :
         absl::StrSplit(*jsonl, '\n', absl::SkipEmpty())) {
      auto document = ParseJsonDocument(line);
      if (!document.ok()) return document.status();
      const auto labels = TaskLabels(*document);
      if (labels.empty()) continue;
      // E-mails are short and repetitive: one passage each.
      const int limit = document->source() == "spam_assassin"
                            ? 1
                            : absl::GetFlag(FLAGS_max_passages_per_document);
      const std::vector<std::string> passages =
          Passages(document->text(), absl::GetFlag(FLAGS_passage_chars), limit);
      const std::string group =
          absl::StrCat(document->source(), "/", document->id());
      for (size_t i = 0; i < passages.size(); ++i) {
        for (const auto& [task, label] : labels) {
          Passage passage;
          passage.key = Sha256Hex(absl::StrCat(task, "\n", group, "\n", i));
          passage.document.set_id(absl::StrCat(group, "#", i));
          passage.document.set_source(task);
          passage.document.set_label(label);
          passage.document.set_text(passages[i]);
          (*passage.document.mutable_metadata())["group"] = group;
          tasks[task][label].push_back(passage);
        }
      }
    }
  }
  std::string summary;
  StagedOutputs outputs;  // Every task's set and classes.tsv, or nothing.
  for (auto& [task, classes] : tasks) {
    const size_t cap = task == "brown_pos"
                           ? absl::GetFlag(FLAGS_max_per_pos_class)
                           : absl::GetFlag(FLAGS_max_per_class);
    std::vector<Passage> kept;
    for (auto& [label, passages] : classes) {
      std::sort(
          passages.begin(), passages.end(),
          [](const Passage& a, const Passage& b) { return a.key < b.key; });
      if (passages.size() > cap) passages.resize(cap);
      absl::StrAppend(&summary, task, "\t", label, "\t", passages.size(), "\n");
      kept.insert(kept.end(), passages.begin(), passages.end());
    }
    std::sort(kept.begin(), kept.end(),
              [](const Passage& a, const Passage& b) { return a.key < b.key; });
    std::string out;
    for (const Passage& passage : kept) {
      absl::StrAppend(&out, DocumentToJson(passage.document), "\n");
    }
    if (absl::Status s =
            outputs.WriteFile(absl::StrCat(out_dir, "/", task, ".jsonl"), out);
        !s.ok()) {
      return s;
    }
  }
  std::fputs(summary.c_str(), stderr);
  if (absl::Status s = outputs.WriteFile(absl::StrCat(out_dir, "/classes.tsv"),
                                         "task\tlabel\tpassages\n" + summary);
      !s.ok()) {
    return s;
  }
  return outputs.Commit();
}

}  // namespace
}  // namespace sparse_layers::datasets

int main(int argc, char** argv) {
  sparse_layers::InitMain(argc, argv, "Builds labelled probing sets.");
  return sparse_layers::RunMain(sparse_layers::datasets::Run);
}
