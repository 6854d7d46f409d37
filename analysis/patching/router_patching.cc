#include "analysis/patching/router_patching.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <random>
#include <string>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "base/common/status_macros.h"
#include "models/hook_lookup.h"

namespace sparse_layers::analysis {
namespace {

std::string FfnHookName(int block, const std::string& hook) {
  return "blocks." + std::to_string(block) + ".ffn." + hook;
}

// `into` with position `position` of every sequence copied from `from`;
// both viewed as (B, T, ...) with the batch shape of `tokens`.
torch::Tensor CopyPosition(const torch::Tensor& into, const torch::Tensor& from,
                           const torch::Tensor& tokens, int position) {
  const int64_t batch = tokens.size(0), length = tokens.size(1);
  torch::Tensor out = into.clone();
  out.view({batch, length, -1})
      .select(1, position)
      .copy_(from.reshape({batch, length, -1}).select(1, position));
  return out;
}

// The forward pass's last-position logits; then every hook the caller set is
// removed again.
torch::Tensor LastLogitsThenUnhook(layers::GptImpl& model,
                                   const torch::Tensor& tokens) {
  const torch::Tensor logits =
      model.forward(tokens).select(1, tokens.size(1) - 1);
  model.ClearHooks();
  return logits;
}

}  // namespace

std::vector<std::shared_ptr<layers::ProductKeyFfnImpl>> ProductKeyLayers(
    layers::GptImpl& model) {
  std::vector<std::shared_ptr<layers::ProductKeyFfnImpl>> out;
  for (const layers::Block& block : model.blocks) {
    out.push_back(
        std::dynamic_pointer_cast<layers::ProductKeyFfnImpl>(block->ffn));
  }
  return out;
}

absl::StatusOr<RecordedRun> RunAndRecord(layers::GptImpl& model,
                                         const torch::Tensor& tokens) {
  torch::NoGradGuard no_grad;
  const auto product_key = ProductKeyLayers(model);
  const int blocks = static_cast<int>(product_key.size());
  RecordedRun run;
  run.routing.resize(blocks);
  std::vector<std::vector<torch::Tensor>> hidden(blocks), scores(blocks),
      indices(blocks);
  const absl::Cleanup clear_hooks = [&model] { model.ClearHooks(); };
  for (int b = 0; b < blocks; ++b) {
    if (product_key[b]) {
      ASSIGN_OR_RETURN(
          layers::HookPoint * router_scores,
          layers::RequireHook(model, FfnHookName(b, "hook_router_scores")));
      router_scores->Add(layers::CaptureHook(&scores[b]));
      ASSIGN_OR_RETURN(
          layers::HookPoint * router_indices,
          layers::RequireHook(model, FfnHookName(b, "hook_router_indices")));
      router_indices->Add(layers::CaptureHook(&indices[b]));
    }
    ASSIGN_OR_RETURN(layers::HookPoint * ffn_hidden,
                     layers::RequireHook(model, FfnHookName(b, "hook_hidden")));
    ffn_hidden->Add(layers::CaptureHook(&hidden[b]));
  }
  run.last_logits = LastLogitsThenUnhook(model, tokens);
  for (int b = 0; b < blocks; ++b) {
    run.ffn_hidden.push_back(hidden[b].at(0));
    if (product_key[b]) run.routing[b] = {scores[b].at(0), indices[b].at(0)};
  }
  return run;
}

absl::StatusOr<torch::Tensor> RunPatched(layers::GptImpl& model,
                                         const torch::Tensor& tokens,
                                         const RecordedRun& source,
                                         PatchKind kind,
                                         const std::vector<int>& blocks,
                                         int position) {
  torch::NoGradGuard no_grad;
  const auto product_key = ProductKeyLayers(model);
  const absl::Cleanup clear_hooks = [&model] { model.ClearHooks(); };
  for (int b : blocks) {
    if (b < 0 || b >= static_cast<int>(product_key.size())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "block ", b, " of a model of ", product_key.size(), " blocks"));
    }
    if (kind == PatchKind::kRouting) {
      if (!product_key[b]) {
        return absl::InvalidArgumentError(
            absl::StrCat("block ", b, " has no product-key FFN"));
      }
      if (b >= static_cast<int>(source.routing.size()) ||
          !source.routing[b].scores.defined()) {
        return absl::InvalidArgumentError(
            absl::StrCat("the recorded run has no routing at block ", b));
      }
      const layers::ProductTopK& from = source.routing[b];
      for (const auto& [hook, patched] :
           {std::pair{"hook_router_scores", &from.scores},
            std::pair{"hook_router_indices", &from.indices}}) {
        ASSIGN_OR_RETURN(layers::HookPoint * point,
                         layers::RequireHook(model, FfnHookName(b, hook)));
        point->Add(layers::ReplaceHook(
            [patched, &tokens, position](const torch::Tensor& routing) {
              return CopyPosition(routing, *patched, tokens, position);
            }));
      }
    } else {
      if (b >= static_cast<int>(source.ffn_hidden.size())) {
        return absl::InvalidArgumentError(absl::StrCat(
            "the recorded run has no FFN activations at block ", b));
      }
      const torch::Tensor& from = source.ffn_hidden[b];
      ASSIGN_OR_RETURN(
          layers::HookPoint * point,
          layers::RequireHook(model, FfnHookName(b, "hook_hidden")));
      point->Add(layers::ReplaceHook(
          [&from, &tokens, position](const torch::Tensor& hidden) {
            return CopyPosition(hidden, from, tokens, position);
          }));
    }
  }
  return LastLogitsThenUnhook(model, tokens);
}

torch::Tensor LogitDifference(const torch::Tensor& last_logits,
                              const torch::Tensor& clean_answers,
                              const torch::Tensor& counterfactual_answers) {
  return last_logits.gather(1, clean_answers.view({-1, 1})).squeeze(1) -
         last_logits.gather(1, counterfactual_answers.view({-1, 1})).squeeze(1);
}

PatchEffect SummariseEffect(const torch::Tensor& m_clean,
                            const torch::Tensor& m_counterfactual,
                            const torch::Tensor& m_patched) {
  PatchEffect effect;
  const torch::Tensor nie =
      (m_clean - m_patched) / (m_clean - m_counterfactual + 1e-8);
  effect.mean_nie = nie.mean().item<double>();
  effect.rank_flip_rate =
      (m_patched < 0).to(torch::kDouble).mean().item<double>();
  effect.mean_logit_difference = m_patched.mean().item<double>();
  return effect;
}

torch::Tensor GatingVectors(const torch::Tensor& indices,
                            const torch::Tensor& scores, int64_t width) {
  return torch::zeros({indices.size(0), width}, scores.options())
      .scatter_(1, indices, scores);
}

NeighbourAgreements NeighbourAgreementPerVector(
    const torch::Tensor& vectors, const std::vector<int>& category,
    const std::vector<int>* token, int neighbours, uint64_t seed) {
  torch::NoGradGuard no_grad;
  const int64_t n = vectors.size(0);
  TORCH_CHECK(static_cast<int64_t>(category.size()) == n && n > neighbours,
              "one category per vector and more vectors than neighbours");
  const torch::Tensor unit =
      vectors.to(torch::kFloat) /
      vectors.to(torch::kFloat).norm(2, 1, true).clamp_min(1e-12);
  torch::Tensor similarity = unit.mm(unit.t());
  similarity.fill_diagonal_(-2.0);  // Below any cosine: self is excluded.
  if (token != nullptr) {
    TORCH_CHECK(static_cast<int64_t>(token->size()) == n,
                "one token per vector");
    const torch::Tensor t =
        torch::tensor(std::vector<int64_t>(token->begin(), token->end()));
    const torch::Tensor same = t.view({-1, 1}) == t.view({1, -1});
    TORCH_CHECK((~same).sum(1).min().item<int64_t>() >= neighbours,
                "every vector needs ", neighbours, " vectors of other tokens");
    similarity.masked_fill_(same, -3.0);  // Same token: never a neighbour.
  }
  const torch::Tensor nearest =
      std::get<1>(similarity.topk(neighbours, 1)).contiguous();
  const int64_t* ids = nearest.data_ptr<int64_t>();
  const auto agreement = [&](const std::vector<int>& labels) {
    std::vector<double> out(n);
    for (int64_t i = 0; i < n; ++i) {
      int same = 0;
      for (int j = 0; j < neighbours; ++j) {
        same += labels[ids[i * neighbours + j]] == labels[i];
      }
      out[i] = static_cast<double>(same) / neighbours;
    }
    return out;
  };
  std::vector<int> shuffled = category;
  std::mt19937_64 rng(seed);
  std::shuffle(shuffled.begin(), shuffled.end(), rng);
  return {agreement(category), agreement(shuffled)};
}

std::vector<GroupAgreement> MeanAgreementByGroup(
    const NeighbourAgreements& agreements, const std::vector<int>& group) {
  TORCH_CHECK(group.size() == agreements.agreement.size(),
              "one group per vector");
  std::map<int, GroupAgreement> sums;
  for (size_t i = 0; i < group.size(); ++i) {
    GroupAgreement& g = sums[group[i]];
    g.group = group[i];
    ++g.vectors;
    g.agreement += agreements.agreement[i];
    g.shuffled += agreements.shuffled[i];
  }
  std::vector<GroupAgreement> out;
  for (auto& [unused, g] : sums) {
    g.agreement /= g.vectors;
    g.shuffled /= g.vectors;
    out.push_back(g);
  }
  return out;
}

}  // namespace sparse_layers::analysis
