#include "analysis/attention/operand_heads.h"

#include <algorithm>
#include <limits>
#include <map>
#include <utility>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "base/common/status_macros.h"
#include "models/hook_lookup.h"
#include "ops/hooks/hook_point.h"

namespace sparse_layers::analysis {
namespace {

// Prompt indices grouped by token count, so each group runs as one batch.
std::map<size_t, std::vector<int64_t>> ByLength(
    const std::vector<std::vector<int>>& prompts) {
  std::map<size_t, std::vector<int64_t>> groups;
  for (size_t i = 0; i < prompts.size(); ++i) {
    groups[prompts[i].size()].push_back(static_cast<int64_t>(i));
  }
  return groups;
}

torch::Tensor Batch(const std::vector<std::vector<int>>& prompts,
                    const std::vector<int64_t>& indices) {
  const int64_t length = static_cast<int64_t>(prompts[indices[0]].size());
  torch::Tensor tokens = torch::empty(
      {static_cast<int64_t>(indices.size()), length}, torch::kLong);
  auto view = tokens.accessor<int64_t, 2>();
  for (size_t r = 0; r < indices.size(); ++r) {
    for (int64_t t = 0; t < length; ++t) view[r][t] = prompts[indices[r]][t];
  }
  return tokens;
}

}  // namespace

std::array<OperandHead, 2> MostSpecificHeads(const torch::Tensor& z,
                                             double min_active_share) {
  const torch::Tensor x = z.to(torch::kDouble);  // (A, B, H)
  const torch::Tensor centred = x - x.mean(std::vector<int64_t>{0, 1}, true);
  const torch::Tensor total =
      centred.pow(2).mean(std::vector<int64_t>{0, 1});               // (H)
  const torch::Tensor op1 = centred.mean(1).pow(2).mean(0) / total;  // (H)
  const torch::Tensor op2 = centred.mean(0).pow(2).mean(0) / total;  // (H)
  const torch::Tensor active =
      (x > 0).to(torch::kDouble).mean(std::vector<int64_t>{0, 1});  // (H)
  // Heads active on fewer than `min_active_share` of the cells score -inf.
  const torch::Tensor eligible = (active >= min_active_share) & (total > 0);
  std::array<OperandHead, 2> best;
  for (int operand = 0; operand < 2; ++operand) {
    const torch::Tensor own = operand == 0 ? op1 : op2;
    const torch::Tensor other = operand == 0 ? op2 : op1;
    const torch::Tensor score = torch::where(
        eligible, own - other,
        torch::full_like(own, -std::numeric_limits<double>::infinity()));
    const int64_t head = score.argmax().item<int64_t>();
    if (!eligible[head].item<bool>()) continue;
    best[operand] = {head, own[head].item<double>(),
                     other[head].item<double>()};
  }
  return best;
}

OperandShares OperandVarianceShares(const torch::Tensor& z) {
  const std::array<OperandHead, 2> best =
      MostSpecificHeads(z.unsqueeze(-1), 0.0);
  // One head: its own shares, whichever operand it favours.
  if (best[0].head < 0) return {};
  return {best[0].own, best[0].other};
}

std::array<double, 2> ShuffledSpecificity(const torch::Tensor& z,
                                          double min_active_share,
                                          uint64_t seed) {
  const int64_t a = z.size(0), b = z.size(1);
  torch::Generator generator = at::detail::createCPUGenerator(seed);
  const torch::Tensor order =
      torch::randperm(a * b, generator, torch::TensorOptions(torch::kLong));
  const torch::Tensor shuffled =
      z.reshape({a * b, -1}).index_select(0, order).reshape(z.sizes());
  const std::array<OperandHead, 2> best =
      MostSpecificHeads(shuffled, min_active_share);
  return {best[0].specificity(), best[1].specificity()};
}

std::vector<std::vector<int>> OperandPrompts(
    const datasets::Tokenizer& tokenizer, int grid) {
  std::vector<std::vector<int>> prompts;
  for (int a = 0; a < grid; ++a) {
    for (int b = 0; b < grid; ++b) {
      // As planted (datasets/synthetic: "a + b = c."), after a document break
      // (the tokenizer's begin-of-text piece where it has one, else eos).
      std::vector<int> ids = {tokenizer.bos_id() >= 0 ? tokenizer.bos_id()
                                                      : tokenizer.eos_id()};
      const std::vector<int> text =
          tokenizer.Encode(absl::StrCat(a, " + ", b, " ="));
      ids.insert(ids.end(), text.begin(), text.end());
      prompts.push_back(std::move(ids));
    }
  }
  return prompts;
}

absl::StatusOr<OperandInputs> OperandAttentionInputs(
    layers::GptImpl& model, int block,
    const std::vector<std::vector<int>>& prompts) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> captured;
  ASSIGN_OR_RETURN(layers::HookPoint * hook,
                   layers::RequireHook(
                       model, absl::StrCat("blocks.", block, ".attn.hook_in")));
  hook->Add(layers::CaptureHook(&captured));
  const absl::Cleanup clear_hooks = [&model] { model.ClearHooks(); };
  OperandInputs inputs;
  inputs.prompts = static_cast<int64_t>(prompts.size());
  for (const auto& [length, indices] : ByLength(prompts)) {
    captured.clear();
    model.Hidden(Batch(prompts, indices));
    inputs.groups.emplace_back(
        torch::tensor(indices, torch::kLong),
        captured.at(0).reshape({static_cast<int64_t>(indices.size()),
                                static_cast<int64_t>(length), -1}));
  }
  return inputs;
}

torch::Tensor OperandActivations(const layers::LorsaImpl& lorsa,
                                 const OperandInputs& inputs, int grid) {
  torch::NoGradGuard no_grad;
  const int64_t heads = lorsa.options().ov_heads;
  torch::Tensor z = torch::empty({inputs.prompts, heads});
  for (const auto& [indices, x] : inputs.groups) {
    // Every head's z (K = H: no head left out) at the last position.
    const torch::Tensor last =
        lorsa.Run(x, heads).activations.select(1, x.size(1) - 1);
    z.index_copy_(0, indices, last);
  }
  return z.view({grid, grid, heads});
}

absl::StatusOr<SumLoss> SumContinuationLoss(
    layers::GptImpl& model, const datasets::Tokenizer& tokenizer,
    const std::vector<std::vector<int>>& prompts, int grid) {
  torch::NoGradGuard no_grad;
  // Prompt + the pieces of c after a space, for the true and the shifted sum.
  std::vector<std::vector<int>> sequences;
  std::vector<size_t> prompt_lengths;
  for (size_t i = 0; i < prompts.size(); ++i) {
    const int sum = static_cast<int>(i) / grid + static_cast<int>(i) % grid;
    const int shifted = sum + 10 < 2 * grid - 1 ? sum + 10 : sum - 10;
    for (const int c : {sum, shifted}) {
      std::vector<int> ids = prompts[i];
      const std::vector<int> pieces = tokenizer.EncodeWord(absl::StrCat(c));
      if (pieces.empty()) {
        return absl::InternalError(
            absl::StrCat("the tokenizer encodes ", c, " as nothing"));
      }
      ids.insert(ids.end(), pieces.begin(), pieces.end());
      sequences.push_back(std::move(ids));
      prompt_lengths.push_back(prompts[i].size());
    }
  }
  std::vector<double> loss(sequences.size());
  constexpr size_t kChunk = 64;  // Sequences per forward: logits stay small.
  for (const auto& [length, group] : ByLength(sequences)) {
    if (static_cast<int64_t>(length) > model.options().context_length) {
      return absl::InvalidArgumentError(absl::StrCat(
          "an operand prompt and its sum of ", length,
          " tokens exceed the context of ", model.options().context_length));
    }
    for (size_t start = 0; start < group.size(); start += kChunk) {
      const std::vector<int64_t> indices(
          group.begin() + start,
          group.begin() + std::min(group.size(), start + kChunk));
      const torch::Tensor tokens = Batch(sequences, indices);
      // log p(token t | < t) = logit - logsumexp, at the targets only.
      const torch::Tensor logits =
          model.forward(tokens).slice(1, 0, length - 1);
      const torch::Tensor target = tokens.slice(1, 1).unsqueeze(-1);
      const torch::Tensor log_probs =
          (logits.gather(-1, target).squeeze(-1) - logits.logsumexp(-1))
              .to(torch::kDouble);
      const auto lp = log_probs.accessor<double, 2>();
      for (size_t r = 0; r < indices.size(); ++r) {
        const size_t i = static_cast<size_t>(indices[r]);
        for (size_t t = prompt_lengths[i]; t < length; ++t) {
          loss[i] -= lp[r][t - 1];
        }
      }
    }
  }
  SumLoss mean;
  for (size_t i = 0; i < loss.size(); i += 2) {
    mean.true_sum += loss[i];
    mean.shifted_sum += loss[i + 1];
  }
  mean.true_sum /= static_cast<double>(prompts.size());
  mean.shifted_sum /= static_cast<double>(prompts.size());
  return mean;
}

}  // namespace sparse_layers::analysis
