// Synthetic documents with known attention behaviour for the Lorsa base LM
// (arXiv:2504.20938 Sec. 6 finds these heads in Pythia): repeated spans of
// random one-piece words (induction and previous-token heads), counting runs
// of numbers and letters (successor heads) and small additions "a + b = c"
// (operand heads). Written as the local-corpus JSONL that
// datasets/text:text_corpus mixes in.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "datasets/text/corpus_readers.h"
#include "datasets/text/tokenizer.h"
#include "layers/backend/torch_init.h"
#include "tools/common/file_io.h"

ABSL_FLAG(std::string, tokenizer, "",
          "SentencePiece model the LM is trained with (span words)");
ABSL_FLAG(int, documents, 2000, "Documents to write");
ABSL_FLAG(int, segments, 6, "Segments per document");
ABSL_FLAG(uint64_t, seed, 1, "Generator seed");
ABSL_FLAG(double, induction_share, 0.5,
          "Share of segments that are repeated spans (the rest: 40% counting, "
          "60% sums)");
ABSL_FLAG(int, span_words, 0,
          "Words the repeated spans draw from: a seeded sample of this many "
          "one-piece words (0: all of them)");
ABSL_FLAG(std::string, span_words_out, "",
          "Optional: where to write the span words, one per line (the "
          "induction probe of evaluate_lorsa draws from them)");
ABSL_FLAG(std::string, out, "", "JSONL path");

namespace sparse_layers::experiments {
namespace {

// The words of the tokenizer's word-initial pieces that encode to that one
// piece: a span of them is a span of random tokens, the sequences on which
// induction heads form (Olsson et al. 2022, arXiv:2209.11895 Sec. 3), and the
// pool the induction probe of evaluate_lorsa draws from.
absl::StatusOr<std::vector<std::string>> OnePieceWords() {
  std::string error;
  std::unique_ptr<datasets::Tokenizer> tokenizer =
      datasets::Tokenizer::Load(absl::GetFlag(FLAGS_tokenizer), &error);
  if (!tokenizer) return absl::InvalidArgumentError(error);
  std::vector<std::string> words;
  for (int id = 0; id < tokenizer->vocab_size(); ++id) {
    const std::string word = datasets::WordOfPiece(tokenizer->Piece(id));
    if (word.empty() || word.find_first_of(" \n.") != std::string::npos) {
      continue;
    }
    if (tokenizer->Encode(word) == std::vector<int>{id}) words.push_back(word);
  }
  if (words.size() < 16) {
    return absl::FailedPreconditionError("fewer than 16 one-piece words");
  }
  return words;
}

class Generator {
 public:
  Generator(std::vector<std::string> words, uint64_t seed)
      : words_(std::move(words)), rng_(seed) {}

  // A span of 8-20 random words, then two or three times: 0-5 other words and
  // the span again (whole, or a prefix of at least 4 words). Every copy after
  // the first is predictable only by in-context copying, so more copies give
  // the induction circuit more of the loss (Olsson et al. 2022 Sec. 5).
  std::string Induction() {
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

  // 6-15 consecutive numbers from a random start below 90, or letters.
  std::string Counting() {
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

  // 3-6 sums "a + b = c." with a + b < 100.
  std::string Additions() {
    std::vector<std::string> sums;
    for (int n = Uniform(3, 6); n > 0; --n) {
      const int a = Uniform(0, 49), b = Uniform(0, 49);
      sums.push_back(absl::StrCat(a, " + ", b, " = ", a + b, "."));
    }
    return absl::StrJoin(sums, " ");
  }

  std::string Document(int segments, double induction_share) {
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

 private:
  int Uniform(int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, hi)(rng_);
  }
  std::vector<std::string> Words(int n) {
    std::vector<std::string> out;
    for (int i = 0; i < n; ++i) {
      out.push_back(words_[Uniform(0, static_cast<int>(words_.size()) - 1)]);
    }
    return out;
  }

  std::vector<std::string> words_;
  std::mt19937_64 rng_;
};

absl::Status Run() {
  const double induction_share = absl::GetFlag(FLAGS_induction_share);
  if (!(induction_share >= 0 && induction_share < 1)) {
    return absl::InvalidArgumentError("--induction_share must be in [0, 1)");
  }
  if (absl::Status s = FirstError(
          {RequiredFile(FLAGS_tokenizer), RequiredFlag(FLAGS_out),
           FlagAtLeast(FLAGS_documents, 0), FlagAtLeast(FLAGS_segments, 1),
           FlagAtLeast(FLAGS_span_words, 0)});
      !s.ok()) {
    return s;
  }
  absl::StatusOr<std::vector<std::string>> words = OnePieceWords();
  if (!words.ok()) return words.status();
  // A small pool shortens the plateau before induction heads form (measured
  // at cpu: no head in 3M tokens over 773 words, a phase change near 4M
  // tokens over 32; cf. Reddy 2023, arXiv:2312.03002, on the number of
  // classes), so the base LM gets one within a cpu-scale budget.
  const int span_words = absl::GetFlag(FLAGS_span_words);
  if (span_words > 0) {
    if (span_words > static_cast<int>(words->size())) {
      return absl::InvalidArgumentError(
          absl::StrCat("--span_words=", span_words, " but the tokenizer has ",
                       words->size(), " one-piece words"));
    }
    std::mt19937_64 pool_rng(absl::GetFlag(FLAGS_seed));
    std::shuffle(words->begin(), words->end(), pool_rng);
    words->resize(span_words);
    std::sort(words->begin(), words->end());
  }
  if (const std::string path = absl::GetFlag(FLAGS_span_words_out);
      !path.empty()) {
    if (absl::Status s =
            WriteFileAtomically(path, absl::StrJoin(*words, "\n") + "\n");
        !s.ok()) {
      return s;
    }
  }
  const size_t vocabulary = words->size();
  Generator generator(*std::move(words), absl::GetFlag(FLAGS_seed));
  std::string out;
  for (int d = 0; d < absl::GetFlag(FLAGS_documents); ++d) {
    datasets::Document document;
    document.set_id(absl::StrCat("synthetic-", d));
    document.set_source("synthetic");
    document.set_text(
        generator.Document(absl::GetFlag(FLAGS_segments), induction_share));
    absl::StrAppend(&out, datasets::DocumentToJson(document), "\n");
  }
  if (absl::Status s = WriteFileAtomically(absl::GetFlag(FLAGS_out), out);
      !s.ok()) {
    return s;
  }
  std::printf("%d synthetic documents from %zu one-piece words\n",
              absl::GetFlag(FLAGS_documents), vocabulary);
  return absl::OkStatus();
}

}  // namespace
}  // namespace sparse_layers::experiments

int main(int argc, char** argv) {
  sparse_layers::InitMain(
      argc, argv,
      "build_synthetic_documents --tokenizer=bpe.model --out=F.jsonl");
  return sparse_layers::RunMain(sparse_layers::experiments::Run);
}
