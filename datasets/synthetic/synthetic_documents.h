// Synthetic documents with known attention behaviour for the Lorsa base LM
// (arXiv:2504.20938 Sec. 6 finds these heads in Pythia): repeated spans of
// random one-piece words (induction and previous-token heads), counting runs
// of numbers and letters (successor heads) and small additions "a + b = c"
// (operand heads).
#ifndef SPARSE_LAYERS_DATASETS_SYNTHETIC_SYNTHETIC_DOCUMENTS_H_
#define SPARSE_LAYERS_DATASETS_SYNTHETIC_SYNTHETIC_DOCUMENTS_H_

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "datasets/text/tokenizer.h"

namespace sparse_layers::datasets {

// The words of the tokenizer's word-initial pieces that encode to that one
// piece: a span of them is a span of random tokens, the sequences on which
// induction heads form (Olsson et al. 2022, arXiv:2209.11895 Sec. 3), and the
// pool the Lorsa induction probe draws from. Fails below 16 words.
absl::StatusOr<std::vector<std::string>> OnePieceWords(
    const Tokenizer& tokenizer);

// A seeded sample of `size` of `words`, sorted (0: all of them, unsorted). A
// small pool shortens the plateau before induction heads form (measured at
// cpu: no head in 3M tokens over 773 words, a phase change near 4M tokens
// over 32; cf. Reddy 2023, arXiv:2312.03002, on the number of classes).
absl::StatusOr<std::vector<std::string>> SpanWordPool(
    std::vector<std::string> words, int size, uint64_t seed);

class SyntheticDocumentGenerator {
 public:
  SyntheticDocumentGenerator(std::vector<std::string> words, uint64_t seed)
      : words_(std::move(words)), rng_(seed) {}

  // A span of 8-20 random words, then two or three times: 0-5 other words and
  // the span again (whole, or a prefix of at least 4 words). Every copy after
  // the first is predictable only by in-context copying, so more copies give
  // the induction circuit more of the loss (Olsson et al. 2022 Sec. 5).
  std::string Induction();
  // 6-15 consecutive numbers from a random start below 90, or letters.
  std::string Counting();
  // 3-6 sums "a + b = c." with a, b < 50.
  std::string Additions();
  // `segments` lines, each an induction span with probability
  // `induction_share`, else counting (40%) or additions (60%).
  std::string Document(int segments, double induction_share);

 private:
  int Uniform(int lo, int hi);
  std::vector<std::string> Words(int n);

  std::vector<std::string> words_;
  std::mt19937_64 rng_;
};

}  // namespace sparse_layers::datasets

#endif  // SPARSE_LAYERS_DATASETS_SYNTHETIC_SYNTHETIC_DOCUMENTS_H_
