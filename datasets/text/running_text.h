// Token pieces as running text shows them, for listings of contexts.
#ifndef SPARSE_LAYERS_DATASETS_TEXT_RUNNING_TEXT_H_
#define SPARSE_LAYERS_DATASETS_TEXT_RUNNING_TEXT_H_

#include <string>

#include "datasets/text/tokenizer.h"

namespace sparse_layers::datasets {

// One piece as running text shows it: a word-initial piece with its space
// (whichever marker spells it), any other piece decoded alone.
inline std::string PieceInRunningText(const Tokenizer& tokenizer, int id) {
  const std::string word = tokenizer.WordOfPiece(id);
  return word.empty() ? tokenizer.Decode({id}) : " " + word;
}

}  // namespace sparse_layers::datasets

#endif  // SPARSE_LAYERS_DATASETS_TEXT_RUNNING_TEXT_H_
