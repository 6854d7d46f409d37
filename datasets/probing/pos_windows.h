// Token-level probing examples from the POS-tagged Brown corpus: each example
// is a short window of text ending at a tagged word, labelled with that word's
// coarse part of speech, and probed at its last token (Gurnee et al. 2023
// probe single tokens; MxD arXiv:2505.21364 App. B.5 pools whole texts, and
// a dictionary's units are expected to separate token classes that a random
// direction does not).
#ifndef SPARSE_LAYERS_DATASETS_PROBING_POS_WINDOWS_H_
#define SPARSE_LAYERS_DATASETS_PROBING_POS_WINDOWS_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace sparse_layers::datasets {

// The coarse class of a Brown tag ("nn-tl" -> "noun", "vbd" -> "verb"), or ""
// for tags outside the seven classes (punctuation, contractions with '+',
// foreign words, modals, conjunctions, ...). Classes: noun, verb, adjective,
// adverb, preposition, determiner, pronoun.
std::string CoarsePosClass(absl::string_view brown_tag);

struct PosExample {
  int word_index = 0;  // Of the target word in the document's tagged words.
  std::string text;    // Untagged window ending with the target word.
  std::string label;   // CoarsePosClass of its tag.
};

// One example per word of a class in `tagged` (a Brown file: word/tag tokens),
// each window holding the target and up to `context_words` words before it
// from the same paragraph, untagged as StripBrownTags does.
std::vector<PosExample> PosWindows(absl::string_view tagged, int context_words);

}  // namespace sparse_layers::datasets

#endif  // SPARSE_LAYERS_DATASETS_PROBING_POS_WINDOWS_H_
