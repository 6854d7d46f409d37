// Fact documents for the factual-recall LM (our analogue of the "The [noun]
// was [adjective]" facts of arXiv:2606.07414 Sec. 4.3): every document states
// every (subject, answer) fact of a pinned CSV once, as "The capital of <state>
// is <capital>.", in a seeded order, with distractor sentences that name the
// subject without the answer. Written as the local-corpus JSONL that
// datasets/text:text_corpus mixes in.
#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/common/file_io.h"
#include "base/common/output_paths.h"
#include "base/common/status_macros.h"
#include "datasets/synthetic/capital_facts.h"
#include "datasets/text/corpus_readers.h"
#include "ops/backend/torch_init.h"

ABSL_FLAG(std::string, facts, "",
          "CSV whose header names answer (or capital) and subject (or state)");
ABSL_FLAG(int, documents, 2000, "Documents to write");
ABSL_FLAG(double, distractor_fraction, 0.2,
          "Per fact and document, the chance of a distractor sentence");
ABSL_FLAG(uint64_t, seed, 1, "Order and distractor seed");
ABSL_FLAG(std::string, out, "", "JSONL path");

namespace sparse_layers::datasets {
namespace {

absl::Status Run() {
  if (absl::Status s =
          FirstError({RequiredFile(FLAGS_facts), RequiredFlag(FLAGS_out),
                      FlagAtLeast(FLAGS_documents, 0),
                      FlagInRange(FLAGS_distractor_fraction, 0.0, 1.0),
                      OutputIsNotAnInput("--out", absl::GetFlag(FLAGS_out),
                                         {absl::GetFlag(FLAGS_facts)})});
      !s.ok()) {
    return s;
  }
  ASSIGN_OR_RETURN(const std::string csv,
                   ReadFileToString(absl::GetFlag(FLAGS_facts)));
  ASSIGN_OR_RETURN(std::vector<CapitalFact> facts,
                   ParseCapitalFacts(csv, absl::GetFlag(FLAGS_facts), 1));
  std::mt19937_64 rng(absl::GetFlag(FLAGS_seed));
  std::bernoulli_distribution distractor(
      absl::GetFlag(FLAGS_distractor_fraction));
  std::string out;
  for (int d = 0; d < absl::GetFlag(FLAGS_documents); ++d) {
    std::shuffle(facts.begin(), facts.end(), rng);
    std::string text;
    for (const auto& [subject, answer] : facts) {
      absl::StrAppend(&text, "The capital of ", subject, " is ", answer, ". ");
      if (distractor(rng)) absl::StrAppend(&text, subject, " is a state. ");
    }
    datasets::Document document;
    document.set_id(absl::StrCat("facts-", d));
    document.set_source("facts");
    document.set_text(text);
    absl::StrAppend(&out, datasets::DocumentToJson(document), "\n");
  }
  RETURN_IF_ERROR(WriteFileAtomically(absl::GetFlag(FLAGS_out), out));
  std::printf("%zu facts x %d documents\n", facts.size(),
              absl::GetFlag(FLAGS_documents));
  return absl::OkStatus();
}

}  // namespace
}  // namespace sparse_layers::datasets

int main(int argc, char** argv) {
  sparse_layers::InitMain(argc, argv,
                          "build_fact_documents --facts=F.csv --out=F.jsonl");
  return sparse_layers::RunMain(sparse_layers::datasets::Run);
}
