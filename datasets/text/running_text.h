// Token pieces as running text shows them, for listings of contexts.
#ifndef SPARSE_LAYERS_DATASETS_TEXT_RUNNING_TEXT_H_
#define SPARSE_LAYERS_DATASETS_TEXT_RUNNING_TEXT_H_

#include <algorithm>
#include <cstdint>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/types/span.h"
#include "datasets/text/tokenizer.h"

namespace sparse_layers::datasets {

// One piece as running text shows it: a word-initial piece with its space
// (whichever marker spells it), any other piece decoded alone, except that a
// piece decoding to a control byte or to U+FFFD (one byte of a multi-byte
// character: SentencePiece's byte fallback) shows as its piece ("<0x00>"),
// so that listings and reports stay printable text.
inline std::string PieceInRunningText(const Tokenizer& tokenizer, int id) {
  const std::string word = tokenizer.WordOfPiece(id);
  if (!word.empty()) return " " + word;
  const std::string text = tokenizer.Decode({id});
  const bool printable =
      !text.empty() &&
      std::none_of(text.begin(), text.end(),
                   [](unsigned char c) { return c < 0x20 || c == 0x7f; }) &&
      !absl::StrContains(text, "\xEF\xBF\xBD");
  return printable ? text : tokenizer.Piece(id);
}

// The pieces ids[position - before .. position + after] (clipped to the
// window) as one line of running text, the piece at `position` marked
// [[...]]: the context a listing shows beside a unit's or head's activation.
inline std::string MarkedContext(const Tokenizer& tokenizer,
                                 absl::Span<const int64_t> ids,
                                 int64_t position, int before, int after) {
  const int64_t start = std::max<int64_t>(0, position - before);
  const int64_t end =
      std::min<int64_t>(static_cast<int64_t>(ids.size()), position + after + 1);
  std::string text;
  for (int64_t j = start; j < end; ++j) {
    absl::StrAppend(&text, j == position ? "[[" : "",
                    PieceInRunningText(tokenizer, static_cast<int>(ids[j])),
                    j == position ? "]]" : "");
  }
  return absl::StrReplaceAll(text, {{kWordStart, " "}, {"\n", " "}});
}

}  // namespace sparse_layers::datasets

#endif  // SPARSE_LAYERS_DATASETS_TEXT_RUNNING_TEXT_H_
