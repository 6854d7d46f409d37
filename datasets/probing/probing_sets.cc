#include "datasets/probing/probing_sets.h"

#include <algorithm>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/common/digest.h"
#include "base/common/file_io.h"
#include "base/common/status_macros.h"
#include "datasets/probing/pos_windows.h"

namespace sparse_layers::datasets {

std::vector<std::string> Passages(const std::string& text, size_t chars,
                                  int limit) {
  std::vector<std::string> out;
  size_t begin = text.find_first_not_of(" \t\r\n");
  while (begin != std::string::npos && static_cast<int>(out.size()) < limit) {
    size_t end = std::min(text.size(), begin + chars);
    if (end < text.size()) {
      // Back to the last whitespace, unless that loses half the passage.
      const size_t space = text.find_last_of(" \t\r\n", end);
      if (space != std::string::npos && space > begin + chars / 2) end = space;
    }
    if (end - begin >= chars / 4)
      out.push_back(text.substr(begin, end - begin));
    begin = text.find_first_not_of(" \t\r\n", end);
  }
  return out;
}

std::string SotuEra(absl::string_view year_text) {
  int year = 0;
  if (!absl::SimpleAtoi(year_text, &year)) return "";
  if (year < 1860) return "1790-1859";
  if (year < 1910) return "1860-1909";
  if (year < 1960) return "1910-1959";
  return "1960-";
}

std::map<std::string, std::string> ProbingLabels(const Document& document) {
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
    if (year != document.metadata().end() && !SotuEra(year->second).empty()) {
      labels["sotu_era"] = SotuEra(year->second);
    }
  }
  if (source == "brown" || source == "sotu" || source == "moby_dick" ||
      source == "spam_assassin") {
    labels["source"] = source;
  }
  return labels;
}

void AddDocumentPassages(const Document& document,
                         const ProbingSetOptions& options,
                         ProbingPassages& tasks) {
  const auto labels = ProbingLabels(document);
  if (labels.empty()) return;
  // E-mails are short and repetitive: one passage each.
  const int limit = document.source() == "spam_assassin"
                        ? 1
                        : options.max_passages_per_document;
  const std::vector<std::string> passages =
      Passages(document.text(), options.passage_chars, limit);
  const std::string group = absl::StrCat(document.source(), "/", document.id());
  for (size_t i = 0; i < passages.size(); ++i) {
    for (const auto& [task, label] : labels) {
      ProbingPassage passage;
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

absl::Status AddBrownPosPassages(const std::string& cats_path,
                                 int context_words, ProbingPassages& tasks) {
  return ForEachBrownFile(
      cats_path, [&](const std::string& file, const std::string& /*genre*/,
                     const std::string& tagged) {
        const std::string group = absl::StrCat("brown/", file);
        for (PosExample& example : PosWindows(tagged, context_words)) {
          ProbingPassage passage;
          passage.key = Sha256Hex(
              absl::StrCat("brown_pos\n", group, "\n", example.word_index));
          passage.document.set_id(absl::StrCat(group, "#", example.word_index));
          passage.document.set_source("brown_pos");
          passage.document.set_label(example.label);
          passage.document.set_text(std::move(example.text));
          (*passage.document.mutable_metadata())["group"] = group;
          // The label belongs to the window's last token, not the window.
          (*passage.document.mutable_metadata())["pool"] = "last";
          tasks["brown_pos"][example.label].push_back(std::move(passage));
        }
        return absl::OkStatus();
      });
}

ProbingSets CapProbingSets(ProbingPassages tasks,
                           const ProbingSetOptions& options) {
  const auto by_key = [](const ProbingPassage& a, const ProbingPassage& b) {
    return a.key < b.key;
  };
  ProbingSets sets;
  for (auto& [task, classes] : tasks) {
    const size_t cap =
        task == "brown_pos" ? options.max_per_pos_class : options.max_per_class;
    std::vector<ProbingPassage> kept;
    for (auto& [label, passages] : classes) {
      std::sort(passages.begin(), passages.end(), by_key);
      if (passages.size() > cap) passages.resize(cap);
      absl::StrAppend(&sets.classes, task, "\t", label, "\t", passages.size(),
                      "\n");
      kept.insert(kept.end(), passages.begin(), passages.end());
    }
    // Key order mixes the classes, so a file's head is not one label.
    std::sort(kept.begin(), kept.end(), by_key);
    std::string& out = sets.jsonl[task];
    for (const ProbingPassage& passage : kept) {
      absl::StrAppend(&out, DocumentToJson(passage.document), "\n");
    }
  }
  return sets;
}

absl::StatusOr<ProbingSets> BuildProbingSets(const ProbingSetOptions& options) {
  ProbingPassages tasks;
  if (!options.brown_cats.empty()) {
    RETURN_IF_ERROR(AddBrownPosPassages(options.brown_cats,
                                        options.pos_context_words, tasks));
  }
  for (const std::string& path : options.corpus) {
    ASSIGN_OR_RETURN(const std::string jsonl, ReadFileToString(path));
    for (absl::string_view line :
         absl::StrSplit(jsonl, '\n', absl::SkipEmpty())) {
      ASSIGN_OR_RETURN(const Document document, ParseJsonDocument(line));
      AddDocumentPassages(document, options, tasks);
    }
  }
  return CapProbingSets(std::move(tasks), options);
}

}  // namespace sparse_layers::datasets
