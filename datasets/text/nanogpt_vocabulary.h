// nanoGPT character models' vocabularies (meta.pkl, as nanoGPT's
// data/*_char/prepare.py and Karvonen's chess models write it: {'vocab_size':
// n, 'itos': {id: char}, 'stoi': {char: id}}) as the .chars vocabulary that
// Tokenizer::Load reads (tokenizer.h), so the metrics read the model's tokens.
#ifndef SPARSE_LAYERS_DATASETS_TEXT_NANOGPT_VOCABULARY_H_
#define SPARSE_LAYERS_DATASETS_TEXT_NANOGPT_VOCABULARY_H_

#include <string>

#include "absl/status/statusor.h"

namespace sparse_layers::datasets {

// The .chars file's text: line 1 the characters in id order, line 2 `eos`
// (the delimiter used as end of sequence: ';' for the chess models). Every
// error is one line naming the file: not a pickle, no itos dict, ids not
// 0..n-1, a token that is not one byte or is a newline (which .chars cannot
// hold), stoi or vocab_size disagreeing with itos, `eos` not in the vocabulary.
absl::StatusOr<std::string> CharsVocabularyFromMetaPkl(
    const std::string& meta_path, char eos);

}  // namespace sparse_layers::datasets

#endif  // SPARSE_LAYERS_DATASETS_TEXT_NANOGPT_VOCABULARY_H_
