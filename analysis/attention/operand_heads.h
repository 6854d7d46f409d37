// Arithmetic operand heads (Lorsa, arXiv:2504.20938 Sec. 6.2, Fig. 7,
// Table 4): on the prompts "a + b =" over a grid of operands (the synthetic
// documents plant "a + b = c" with a, b in 0..49), each Lorsa head's z at the
// last token is read as a function of (a, b). A head that carries operand 1
// to the last position has z explained by a's means and not by b's (the
// paper's "op1 in 27-43", "op1 % 10 in [4, 5, 6]" heads); the share of z's
// variance over the grid explained by each operand's means (R^2) measures it.
#ifndef SPARSE_LAYERS_ANALYSIS_ATTENTION_OPERAND_HEADS_H_
#define SPARSE_LAYERS_ANALYSIS_ATTENTION_OPERAND_HEADS_H_

#include <torch/torch.h>

#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "datasets/text/tokenizer.h"
#include "layers/attention/lorsa.h"
#include "models/gpt.h"

namespace sparse_layers::analysis {

// Shares of the variance of z (A, B) over the grid explained by the means
// over b at each a (op1) and over a at each b (op2); 0 for a constant z.
struct OperandShares {
  double op1 = 0, op2 = 0;
};
OperandShares OperandVarianceShares(const torch::Tensor& z);

// The head of z (A, B, H) most specific to one operand: the largest
// share(own) - share(other) among heads active (z > 0) on at least
// `min_active_share` of the cells; head -1 when none is.
struct OperandHead {
  int64_t head = -1;
  double own = 0, other = 0;
  double specificity() const { return own - other; }
};
// [0]: operand 1, [1]: operand 2.
std::array<OperandHead, 2> MostSpecificHeads(const torch::Tensor& z,
                                             double min_active_share);

// The same largest specificity with the grid cells shuffled (one permutation
// of the A x B cells for every head, drawn from `seed`): what selection of the
// best of H heads gives on a grid that carries no operand.
std::array<double, 2> ShuffledSpecificity(const torch::Tensor& z,
                                          double min_active_share,
                                          uint64_t seed);

// The prompts "<bos>a + b =" for a, b in [0, grid), row-major in (a, b); eos
// in place of bos for a tokenizer without one (our LMs' document break).
std::vector<std::vector<int>> OperandPrompts(
    const datasets::Tokenizer& tokenizer, int grid);

// The base model's attention inputs at `block` for every prompt, batched by
// prompt length: each group's prompt indices and inputs (n, length, d).
struct OperandInputs {
  int64_t prompts = 0;
  std::vector<std::pair<torch::Tensor, torch::Tensor>> groups;
};
absl::StatusOr<OperandInputs> OperandAttentionInputs(
    layers::GptImpl& model, int block,
    const std::vector<std::vector<int>>& prompts);

// z of every head of `lorsa` (no top-K) at the last position of every prompt,
// as (grid, grid, H).
torch::Tensor OperandActivations(const layers::LorsaImpl& lorsa,
                                 const OperandInputs& inputs, int grid);

// The base model's mean loss, over the grid, of the pieces of the true sum
// after "a + b =" and of a sum 10 away (its tens digit changed), teacher
// forced: a model that reads the operands puts more mass on the true one.
struct SumLoss {
  double true_sum = 0, shifted_sum = 0;
};
absl::StatusOr<SumLoss> SumContinuationLoss(
    layers::GptImpl& model, const datasets::Tokenizer& tokenizer,
    const std::vector<std::vector<int>>& prompts, int grid);

}  // namespace sparse_layers::analysis

#endif  // SPARSE_LAYERS_ANALYSIS_ATTENTION_OPERAND_HEADS_H_
