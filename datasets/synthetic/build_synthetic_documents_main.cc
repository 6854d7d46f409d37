// Synthetic documents with known attention behaviour for the Lorsa base LM
// (arXiv:2504.20938 Sec. 6 finds these heads in Pythia): repeated spans of
// random one-piece words (induction and previous-token heads), counting runs
// of numbers and letters (successor heads) and small additions "a + b = c"
// (operand heads), from datasets/synthetic/synthetic_documents.h. Written as
// the local-corpus JSONL that datasets/text:text_corpus mixes in.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/common/file_io.h"
#include "base/common/status_macros.h"
#include "datasets/synthetic/synthetic_documents.h"
#include "datasets/text/corpus_readers.h"
#include "datasets/text/tokenizer.h"
#include "ops/backend/torch_init.h"

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

namespace sparse_layers::datasets {
namespace {

absl::Status Run() {
  const double induction_share = absl::GetFlag(FLAGS_induction_share);
  if (!(induction_share >= 0 && induction_share < 1)) {
    return absl::InvalidArgumentError("--induction_share must be in [0, 1)");
  }
  RETURN_IF_ERROR(FirstError(
      {RequiredFile(FLAGS_tokenizer), RequiredFlag(FLAGS_out),
       FlagAtLeast(FLAGS_documents, 0), FlagAtLeast(FLAGS_segments, 1),
       FlagAtLeast(FLAGS_span_words, 0)}));
  std::string error;
  const std::unique_ptr<Tokenizer> tokenizer =
      Tokenizer::Load(absl::GetFlag(FLAGS_tokenizer), &error);
  if (!tokenizer) return absl::InvalidArgumentError(error);
  ASSIGN_OR_RETURN(std::vector<std::string> words, OnePieceWords(*tokenizer));
  ASSIGN_OR_RETURN(
      words, SpanWordPool(std::move(words), absl::GetFlag(FLAGS_span_words),
                          absl::GetFlag(FLAGS_seed)));
  if (const std::string path = absl::GetFlag(FLAGS_span_words_out);
      !path.empty()) {
    RETURN_IF_ERROR(
        WriteFileAtomically(path, absl::StrJoin(words, "\n") + "\n"));
  }
  const size_t vocabulary = words.size();
  SyntheticDocumentGenerator generator(std::move(words),
                                       absl::GetFlag(FLAGS_seed));
  std::string out;
  for (int d = 0; d < absl::GetFlag(FLAGS_documents); ++d) {
    Document document;
    document.set_id(absl::StrCat("synthetic-", d));
    document.set_source("synthetic");
    document.set_text(
        generator.Document(absl::GetFlag(FLAGS_segments), induction_share));
    absl::StrAppend(&out, DocumentToJson(document), "\n");
  }
  RETURN_IF_ERROR(WriteFileAtomically(absl::GetFlag(FLAGS_out), out));
  std::printf("%d synthetic documents from %zu one-piece words\n",
              absl::GetFlag(FLAGS_documents), vocabulary);
  return absl::OkStatus();
}

}  // namespace
}  // namespace sparse_layers::datasets

int main(int argc, char** argv) {
  sparse_layers::InitMain(
      argc, argv,
      "build_synthetic_documents --tokenizer=bpe.model --out=F.jsonl");
  return sparse_layers::RunMain(sparse_layers::datasets::Run);
}
