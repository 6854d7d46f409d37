// Factual recall and its causal tests on trained LMs (sgatlin
// arXiv:2606.07414 Secs. 4.1-4.3, at our scale): recall of "The capital of
// <state> is", router patching of every ordered (clean, counterfactual) fact
// pair at each position and block (and all blocks), the same with
// FFN-activation patching on a dense-FFN model, and the word-class agreement
// of nearest neighbours among other input tokens' vectors for the gating
// vectors, the dense FFN's activations and the input embeddings. Each table is
// tidy CSV text with the model's runtime.seed in `seed`.
#ifndef SPARSE_LAYERS_ANALYSIS_PATCHING_FACTUAL_RECALL_H_
#define SPARSE_LAYERS_ANALYSIS_PATCHING_FACTUAL_RECALL_H_

#include <torch/torch.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "analysis/patching/router_patching.h"
#include "datasets/text/tokenizer.h"
#include "models/gpt.h"

namespace sparse_layers::analysis {

struct Fact {
  std::string subject, answer;
  std::vector<int64_t> prompt;  // eos (as BOS), then the encoded prompt.
  int64_t answer_id = -1;       // First token of " <answer>", or -1.
};

// Patching pairs each fact with another and a third (the disruption null).
inline constexpr size_t kMinFacts = 3;

// The facts of a capitals table (datasets::ParseCapitalFacts, at least
// kMinFacts), prompted "The capital of <subject> is".
absl::StatusOr<std::vector<Fact>> ParseFacts(absl::string_view csv,
                                             const datasets::Tokenizer& tok,
                                             absl::string_view source);
// eos + the prompt prefix's tokens, as they start every fact's prompt.
std::vector<int64_t> PromptPrefix(const datasets::Tokenizer& tok);

// Coarse word class of a Brown tag (Francis & Kucera 1979 tag set): "noun",
// "verb", "proper_noun", ..., "punctuation", "other".
std::string WordClass(std::string tag);
// Lower-cased word -> its most frequent word class in the tagged Brown files
// (c??? files of `brown_dir`), for words seen at least 3 times.
absl::StatusOr<std::map<std::string, std::string>> BrownLexicon(
    const std::string& brown_dir);

// The five tables, each starting with its header line: recall.csv,
// patching.csv, disruption_null.csv (each patching cell's disruption null,
// only for cells with third-fact pairs: no row, rather than a NaN),
// block_contrasts.csv (each single block's NIE beside the all-block NIE and
// the best other block's, for sgatlin Fig. 7's block claims) and
// neighbours.csv (one row per input token and block).
struct FactRecallTables {
  FactRecallTables();
  std::string recall, patching, disruption_null, block_contrasts, neighbours;
  // Text: the nearest-neighbour circuits of one held-out window's positions
  // (sgatlin Fig. 6, Table 3; AppendNeighbours).
  std::string circuits;
};

// Recall of every fact by `model`, then `kind` patching of every ordered pair
// of recalled facts of equal prompt length with distinct answer tokens (all
// answerable facts when no such pair exists: the tables are never empty), at
// each prefix position, the first and last subject token (<subject>: the noun
// position of Sec. 4.3) and the final token; effects pooled over the length
// groups by pair count. Beside each effect, the disruption null: each pair's
// clean prompt patched with a third fact's state (an answer neither the clean
// nor the counterfactual one), on the pairs whose group has such a fact. A
// model without the patched hooks is an error.
absl::Status AppendPatching(const std::string& model_name, int64_t seed,
                            layers::GptImpl& model, PatchKind kind,
                            const std::vector<Fact>& facts,
                            const datasets::Tokenizer& tok,
                            const std::vector<int64_t>& prefix,
                            FactRecallTables& tables);

struct NeighbourOptions {
  std::string tokens_manifest;  // Held-out token split.
  int windows = 32;             // Windows of 128 tokens.
  int neighbours = 10;          // Nearest neighbours per vector.
  int circuit_positions = 24;   // Query positions of the circuits listing.
};

// For each of `queries` (rows of `vectors`), the `k` rows of `database`
// nearest to it by cosine distance (1 - cos, sklearn's metric, which the
// sgatlin code uses), nearest first.
struct Neighbour {
  int64_t row = -1;
  double distance = 0;
};
std::vector<std::vector<Neighbour>> NearestByCosine(
    const torch::Tensor& vectors, const std::vector<int64_t>& queries,
    const std::vector<int64_t>& database, int k);

// Per input token and block, the word-class agreement of the nearest
// neighbours of its vectors among other tokens' vectors (Sec. 4.1, Fig. 5:
// circuits cluster by semantics, "partially explained" by the input token):
// the sgatlin model's channel-0 gating vectors, the dense model's FFN
// activations, and the sgatlin model's input embeddings (the token alone; the
// same at every block). Also `circuits` (sgatlin Sec. 4.1, Fig. 6, Table 3):
// at the last routed block before the final one, for each of the first
// circuit_positions positions of the first window, the `neighbours` nearest
// channel-0 gating vectors among every window's positions but its own (as
// the paper's database), each with its distance, 5 tokens either side and
// the sgatlin model's top-5 next tokens there.
absl::Status AppendNeighbours(int64_t seed, layers::GptImpl& sparse,
                              layers::GptImpl& dense,
                              const datasets::Tokenizer& tok,
                              const std::map<std::string, std::string>& lexicon,
                              const NeighbourOptions& options,
                              FactRecallTables& tables);

}  // namespace sparse_layers::analysis

#endif  // SPARSE_LAYERS_ANALYSIS_PATCHING_FACTUAL_RECALL_H_
