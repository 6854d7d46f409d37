#include "datasets/probing/pos_windows.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "datasets/text/corpus_readers.h"

namespace sparse_layers::datasets {

std::string CoarsePosClass(absl::string_view brown_tag) {
  std::string tag = absl::AsciiStrToLower(brown_tag);
  if (tag.find('+') != std::string::npos) return "";  // contractions
  tag = tag.substr(0, tag.find('-'));  // "-tl" (title), "-hl" (headline)
  tag.erase(std::remove(tag.begin(), tag.end(), '*'), tag.end());  // negation
  auto starts = [&](absl::string_view prefix) {
    return absl::StartsWith(tag, prefix);
  };
  if (starts("nn") || starts("np")) return "noun";
  if (starts("vb")) return "verb";
  if (starts("jj")) return "adjective";
  if (tag == "rb" || tag == "rbr" || tag == "rbt") return "adverb";
  if (tag == "in") return "preposition";
  if (tag == "at" || starts("dt")) return "determiner";
  if (starts("pp")) return "pronoun";
  return "";
}

std::vector<PosExample> PosWindows(absl::string_view tagged,
                                   int context_words) {
  std::vector<PosExample> out;
  int word_index = 0;
  for (absl::string_view paragraph :
       absl::StrSplit(tagged, absl::ByString("\n\n"), absl::SkipEmpty())) {
    const std::vector<absl::string_view> tokens =
        absl::StrSplit(paragraph, absl::ByAnyChar(" \t\n"), absl::SkipEmpty());
    for (size_t i = 0; i < tokens.size(); ++i, ++word_index) {
      const size_t slash = tokens[i].rfind('/');
      if (slash == absl::string_view::npos || slash == 0) continue;
      const std::string label = CoarsePosClass(tokens[i].substr(slash + 1));
      if (label.empty()) continue;
      const size_t first =
          i >= static_cast<size_t>(context_words) ? i - context_words : 0;
      const std::vector<absl::string_view> window(tokens.begin() + first,
                                                  tokens.begin() + i + 1);
      std::string text = StripBrownTags(absl::StrJoin(window, " "));
      absl::StripTrailingAsciiWhitespace(&text);
      out.push_back({word_index, std::move(text), label});
    }
  }
  return out;
}

}  // namespace sparse_layers::datasets
