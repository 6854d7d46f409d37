#include "analysis/attention/full_sparsification.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analysis/attention/head_analysis.h"
#include "analysis/attention/per_layer_lorsas.h"
#include "base/common/status_macros.h"
#include "ops/hooks/hook_point.h"
#include "pipelines/train/lm_evaluation.h"

namespace sparse_layers::analysis {

torch::Tensor AblatedLorsaImpl::forward(const torch::Tensor& x) {
  const layers::LorsaOutput out = lorsa_->Run(x, lorsa_->options().top_k);
  return out.output -
         out.activations.select(-1, head_).unsqueeze(-1) * lorsa_->w_o[head_];
}

std::vector<BlockHeadScores> LorsaHeadScores(
    layers::GptImpl& model, const std::vector<layers::Lorsa>& lorsas,
    const torch::Tensor& probe, int64_t period) {
  std::vector<std::vector<torch::Tensor>> inputs(model.blocks.size());
  for (size_t b = 0; b < model.blocks.size(); ++b) {
    if (!lorsas[b]) continue;
    model.FindHook(absl::StrCat("blocks.", b, ".attn.hook_in"))
        ->Add(layers::CaptureHook(&inputs[b]));
  }
  const absl::Cleanup clear_hooks = [&model] { model.ClearHooks(); };
  torch::NoGradGuard no_grad;
  model.forward(probe);
  std::vector<BlockHeadScores> scores(model.blocks.size());
  for (size_t b = 0; b < model.blocks.size(); ++b) {
    if (!lorsas[b]) continue;
    const layers::LorsaOutput out =
        lorsas[b]->Run(inputs[b].at(0), lorsas[b]->options().top_k);
    const ZPatternScores z = LorsaZPatternScores(out.pattern, out.values,
                                                 out.activations, 1, period);
    scores[b] = {z.induction,
                 z.previous_token,
                 z.induction_count,
                 z.previous_token_count,
                 (out.activations != 0).flatten(0, 1).any(0),
                 InductionScores(out.pattern, 1, period)};
  }
  return scores;
}

namespace {

// Mean next-token loss inside the first and the second copy of the probe's
// span (BOS, then the span twice).
std::pair<double, double> CopyLosses(layers::GptImpl& model,
                                     const torch::Tensor& probe,
                                     int64_t period) {
  torch::NoGradGuard no_grad;
  const torch::Tensor logits = model.forward(probe);
  const torch::Tensor nll =
      torch::nn::functional::cross_entropy(
          logits.slice(1, 0, -1).flatten(0, 1), probe.slice(1, 1).flatten(),
          torch::nn::functional::CrossEntropyFuncOptions().reduction(
              torch::kNone))
          .view({probe.size(0), -1});
  return {nll.slice(1, 1, period).mean().item<double>(),
          nll.slice(1, period + 1).mean().item<double>()};
}

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

}  // namespace

absl::StatusOr<FullSparsificationTables> FullySparsify(
    const layers::LoadedModel& base, const datasets::Tokenizer& tokenizer,
    const datasets::TokenShardSet& tokens, std::vector<LorsaFit>& fits,
    const FullSparsificationOptions& options) {
  layers::GptImpl& model = *base.model;
  model.eval();
  const size_t blocks = model.blocks.size();
  ASSIGN_OR_RETURN(const PerLayerLorsas per_layer,
                   LorsasAtPerLayerK(fits, blocks));
  const std::vector<layers::Lorsa>& lorsas = per_layer.by_block;
  const int64_t seed = per_layer.seed;
  const int replaced = per_layer.count;
  const int64_t length =
      FitWindowLength(model.options().context_length, options.sequence_length);
  ASSIGN_OR_RETURN(const datasets::BatchSampler sampler,
                   datasets::BatchSampler::Create(&tokens, 16, length, seed));
  const int64_t period =
      std::min<int64_t>(options.probe_period, (length - 1) / 2);
  ASSIGN_OR_RETURN(const torch::Tensor probe,
                   ProbeTokens(tokenizer, period, options.probe_sequences,
                               options.probe_words));
  const auto set_stand_ins = [&](const std::vector<layers::Lorsa>& stand_ins) {
    for (size_t b = 0; b < blocks; ++b) {
      model.blocks[b]->attention_stand_in =
          stand_ins[b] ? stand_ins[b].ptr() : nullptr;
    }
  };
  std::vector<std::shared_ptr<layers::AttentionImpl>> original;
  for (size_t b = 0; b < blocks; ++b) {
    original.push_back(model.blocks[b]->attention_stand_in);
  }
  const absl::Cleanup restore = [&] {
    for (size_t b = 0; b < blocks; ++b) {
      model.blocks[b]->attention_stand_in = original[b];
    }
    model.ClearHooks();
  };

  FullSparsificationTables tables;
  tables.model =
      "seed,model,blocks_replaced,ce,first_copy_loss,second_copy_loss,"
      "copy_gain\n";
  const auto model_row = [&](const std::string& name) {
    const double ce = train::MeanCrossEntropy(model, sampler, options.batches);
    const auto [first, second] = CopyLosses(model, probe, period);
    absl::StrAppendFormat(&tables.model, "%d,%s,%d,%.6f,%.6f,%.6f,%.6f\n", seed,
                          name, name == "base" ? 0 : replaced, ce, first,
                          second, first - second);
  };
  model_row("base");
  for (size_t b = 0; b < blocks; ++b) {
    if (!lorsas[b]) continue;
    model.FindHook(absl::StrCat("blocks.", b, ".attn.hook_out"))
        ->Add(layers::ZeroAblationHook());
  }
  model_row("all_attention_zeroed");
  model.ClearHooks();
  set_stand_ins(lorsas);
  model_row("all_lorsa");

  // The induction head of the fully sparsified model and what feeds it.
  const std::vector<BlockHeadScores> scores =
      LorsaHeadScores(model, lorsas, probe, period);
  int induction_block = -1;
  int64_t induction_head = -1;
  double induction_score = -1;
  for (size_t b = 1; b < blocks; ++b) {
    if (!lorsas[b]) continue;
    const BlockHeadScores& s = scores[b];
    for (int64_t h = 0; h < s.induction.size(0); ++h) {
      if (s.induction_count[h].item<double>() < options.min_positions) {
        continue;
      }
      const double score = s.induction[h].item<double>();
      if (score > induction_score) {
        induction_block = static_cast<int>(b);
        induction_head = h;
        induction_score = score;
      }
    }
  }
  tables.circuit =
      "seed,induction_block,induction_head,induction_score,group_attention,"
      "head_block,head,previous_token_score,group_attention_ablated,drop,"
      "rank\n";
  tables.circuit_summary =
      "seed,found,induction_block,induction_head,induction_score,"
      "heads_ablated,top_head_block,top_head,top_drop,"
      "top_previous_token_score,median_previous_token_score\n";
  struct Ablation {
    int block;
    int64_t head;
    double previous_token, ablated, drop;
  };
  std::vector<Ablation> ablations;
  // The induction head's QK group and its attention to the induction target.
  int64_t group = -1;
  double group_score = 0;
  // A best head below the floor is no induction head: no circuit.
  if (induction_score < options.min_induction_score) induction_block = -1;
  if (induction_block > 0) {
    group = lorsas[induction_block]->GroupOf(induction_head);
    group_score = scores[induction_block].group_induction[group].item<double>();
    for (int b = 0; b < induction_block; ++b) {
      if (!lorsas[b]) continue;
      const BlockHeadScores& s = scores[b];
      for (int64_t g = 0; g < s.active.size(0); ++g) {
        // Scored heads only: a previous-token score over few positions is
        // noise (and 0 for a head active at BOS alone).
        if (s.previous_token_count[g].item<double>() < options.min_positions) {
          continue;
        }
        auto ablated = std::make_shared<AblatedLorsaImpl>(lorsas[b], g);
        model.blocks[b]->attention_stand_in = ablated;
        const double after =
            LorsaHeadScores(model, lorsas, probe, period)[induction_block]
                .group_induction[group]
                .item<double>();
        model.blocks[b]->attention_stand_in = lorsas[b].ptr();
        ablations.push_back({b, g, s.previous_token[g].item<double>(), after,
                             group_score - after});
      }
    }
  }
  std::stable_sort(
      ablations.begin(), ablations.end(),
      [](const Ablation& x, const Ablation& y) { return x.drop > y.drop; });
  std::vector<double> previous_scores;  // Of the heads below the top one.
  for (size_t r = 0; r < ablations.size(); ++r) {
    const Ablation& a = ablations[r];
    if (r > 0) previous_scores.push_back(a.previous_token);
    absl::StrAppendFormat(
        &tables.circuit, "%d,%d,%d,%.6f,%.6f,%d,%d,%.6f,%.6f,%.6f,%d\n", seed,
        induction_block, induction_head, induction_score, group_score, a.block,
        a.head, a.previous_token, a.ablated, a.drop, r + 1);
  }
  if (ablations.size() < 2) {
    absl::StrAppendFormat(&tables.circuit_summary, "%d,0,,,,0,,,,,\n", seed);
  } else {
    const Ablation& top = ablations.front();
    absl::StrAppendFormat(&tables.circuit_summary,
                          "%d,1,%d,%d,%.6f,%d,%d,%d,%.6f,%.6f,%.6f\n", seed,
                          induction_block, induction_head, induction_score,
                          ablations.size(), top.block, top.head, top.drop,
                          top.previous_token, Median(previous_scores));
  }
  std::fprintf(stderr,
               "full_sparsification: %d blocks replaced; induction head %d.%d "
               "(score %.3f), %zu heads ablated\n",
               replaced, induction_block, static_cast<int>(induction_head),
               induction_score, ablations.size());
  return tables;
}

}  // namespace sparse_layers::analysis
