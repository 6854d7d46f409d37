// Output-space faithfulness of fitted replacement layers (MxD arXiv:2505.21364
// App. B.1, Figs. 6-7): prompts from held-out text are continued greedily by
// the base model and by the base with its FFN replaced; the share of prompts
// whose first t generated tokens are identical, for t = 1..T, is the paper's
// prefix-match curve. Beside it, on held-out windows read token by token, the
// mean KL(p_base || p_replaced) of the next-token distributions and the share
// of positions where both models' most likely token agrees (the spec's cheap
// extra faithfulness number). The zero-ablated FFN gives each metric's floor.
#ifndef SPARSE_LAYERS_ANALYSIS_REPLACEMENT_OUTPUT_FAITHFULNESS_H_
#define SPARSE_LAYERS_ANALYSIS_REPLACEMENT_OUTPUT_FAITHFULNESS_H_

#include <torch/torch.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "datasets/text/token_shards.h"
#include "datasets/text/tokenizer.h"
#include "models/gpt.h"
#include "models/model_loader.h"

namespace sparse_layers::analysis {

// prompts (B, P) int64 -> the model's greedy continuation (B, new_tokens): at
// each step the argmax of the last position's logits, appended to the input.
// Inputs longer than the context keep their last context_length tokens.
torch::Tensor GreedyContinuations(layers::GptImpl& model,
                                  const torch::Tensor& prompts, int new_tokens);

// Element t-1: the share of rows whose first t tokens of `a` and `b` (both
// (B, T)) are identical, t = 1..T (MxD Figs. 6-7); non-increasing in t.
std::vector<double> PrefixMatchCurve(const torch::Tensor& a,
                                     const torch::Tensor& b);

struct NextTokenAgreement {
  // Mean over positions of KL(p_reference || p_other) in nats.
  double kl = 0;
  // Share of positions where both models' most likely next token agrees.
  double top1_agreement = 0;
};

// Reference-model next-token log-probabilities for each of `batches` windows
// (B, T, vocab) compared with `other`'s on the same windows.
NextTokenAgreement CompareNextTokens(
    const std::vector<torch::Tensor>& reference_log_probs,
    layers::GptImpl& other, const std::vector<torch::Tensor>& windows);

// The log-softmax of `model`'s logits on each window.
std::vector<torch::Tensor> NextTokenLogProbs(
    layers::GptImpl& model, const std::vector<torch::Tensor>& windows);

struct OutputFaithfulnessOptions {
  std::string base_name = "base";  // The CSVs' `base` column.
  int prompt_batches = 4;          // Prompts: this many test batches...
  int batch_size = 32;             // ...of this many windows each.
  int prompt_tokens = 4;  // Their first tokens (the paper: first 4 words).
  int new_tokens = 32;    // T, the generated tokens (the spec's 32).
  // KL and top-1 agreement: this many test batches of kl_batch_size windows
  // (each batch's (B, T, vocab) log-probabilities are kept for every fit).
  int kl_batches = 8;
  int kl_batch_size = 4;
  // MxD Figs. 8-9: the first `examples` prompts' continuations by the base
  // model, the zero-ablated FFN and every fit with K = examples_k.
  int examples = 4;
  int examples_k = 8;
};

struct OutputFaithfulnessTables {
  // base,name,method,k,seed,training,kl,top1_agreement,mean_prefix_match,
  // final_prefix_match and the zero-ablated FFN's values of the last four
  // (zero_ablated_*), one row per fit.
  std::string faithfulness;
  // base,name,method,k,seed,t,share_identical: each fit's curve, and the
  // zero-ablated FFN's as method "zero_ablation".
  std::string prefix_match;
  // The examples as text (with a tokenizer): each continuation split where it
  // first differs from the base model's.
  std::string examples;
};

// One example's line: `label`, then the continuation decoded, with " || "
// where it first differs from `reference` (both (T) int64) and the number of
// identical tokens before it.
std::string ExampleLine(const std::string& label,
                        const torch::Tensor& continuation,
                        const torch::Tensor& reference,
                        const datasets::Tokenizer& tokenizer);

// The tables for `replacement_paths`, fits of `base` (loaded from base_path)
// at one block, on the test windows of `tokens`; the examples when
// `tokenizer` is not null.
absl::StatusOr<OutputFaithfulnessTables> EvaluateOutputFaithfulness(
    layers::LoadedModel& base, const std::string& base_path,
    const datasets::TokenShardSet& tokens,
    const std::vector<std::string>& replacement_paths,
    const OutputFaithfulnessOptions& options,
    const datasets::Tokenizer* tokenizer);

}  // namespace sparse_layers::analysis

#endif  // SPARSE_LAYERS_ANALYSIS_REPLACEMENT_OUTPUT_FAITHFULNESS_H_
