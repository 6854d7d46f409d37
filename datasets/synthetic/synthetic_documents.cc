#include "datasets/synthetic/synthetic_documents.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace sparse_layers::datasets {

absl::StatusOr<std::vector<std::string>> OnePieceWords(
    const Tokenizer& tokenizer) {
  std::vector<std::string> words;
  for (int id = 0; id < tokenizer.vocab_size(); ++id) {
    const std::string word = tokenizer.WordOfPiece(id);
    if (word.empty() || word.find_first_of(" \n.") != std::string::npos) {
      continue;
    }
    if (tokenizer.EncodeWord(word) == std::vector<int>{id}) {
      words.push_back(word);
    }
  }
  if (words.size() < 16) {
    return absl::FailedPreconditionError("fewer than 16 one-piece words");
  }
  return words;
}

absl::StatusOr<std::vector<std::string>> SpanWordPool(
    std::vector<std::string> words, int size, uint64_t seed) {
  if (size == 0) return words;
  if (size < 0 || size > static_cast<int>(words.size())) {
    return absl::InvalidArgumentError(
        absl::StrCat("--span_words=", size, " but the tokenizer has ",
                     words.size(), " one-piece words"));
  }
  std::mt19937_64 pool_rng(seed);
  std::shuffle(words.begin(), words.end(), pool_rng);
  words.resize(size);
  std::sort(words.begin(), words.end());
  return words;
}

std::string SyntheticDocumentGenerator::Induction() {
  std::vector<std::string> span = Words(Uniform(8, 20));
  std::vector<std::string> text = span;
  for (int copies = Uniform(2, 3); copies > 0; --copies) {
    for (const std::string& w : Words(Uniform(0, 5))) text.push_back(w);
    const int repeat = Uniform(0, 1)
                           ? static_cast<int>(span.size())
                           : Uniform(4, static_cast<int>(span.size()));
    text.insert(text.end(), span.begin(), span.begin() + repeat);
  }
  return absl::StrJoin(text, " ") + ".";
}

std::string SyntheticDocumentGenerator::Counting() {
  std::vector<std::string> run;
  const int length = Uniform(6, 15);
  if (Uniform(0, 2) > 0) {
    const int start = Uniform(0, 89);
    for (int i = 0; i < length; ++i) run.push_back(absl::StrCat(start + i));
  } else {
    const int start = Uniform(0, 25 - std::min(length, 25));
    for (int i = 0; i < length && start + i < 26; ++i) {
      run.push_back(std::string(1, static_cast<char>('a' + start + i)));
    }
  }
  return absl::StrJoin(run, " ") + ".";
}

std::string SyntheticDocumentGenerator::Additions() {
  std::vector<std::string> sums;
  for (int n = Uniform(3, 6); n > 0; --n) {
    const int a = Uniform(0, 49), b = Uniform(0, 49);
    sums.push_back(absl::StrCat(a, " + ", b, " = ", a + b, "."));
  }
  return absl::StrJoin(sums, " ");
}

std::string SyntheticDocumentGenerator::Document(int segments,
                                                 double induction_share) {
  std::vector<std::string> parts;
  for (int s = 0; s < segments; ++s) {
    const double u = std::uniform_real_distribution<double>(0, 1)(rng_);
    const double rest = (u - induction_share) / (1 - induction_share);
    parts.push_back(u < induction_share ? Induction()
                    : rest < 0.4        ? Counting()
                                        : Additions());
  }
  return absl::StrJoin(parts, "\n");
}

int SyntheticDocumentGenerator::Uniform(int lo, int hi) {
  return std::uniform_int_distribution<int>(lo, hi)(rng_);
}

std::vector<std::string> SyntheticDocumentGenerator::Words(int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) {
    out.push_back(words_[Uniform(0, static_cast<int>(words_.size()) - 1)]);
  }
  return out;
}

}  // namespace sparse_layers::datasets
