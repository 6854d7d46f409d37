#include "analysis/attention/lorsa_evaluation.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/types/span.h"
#include "analysis/attention/head_analysis.h"
#include "analysis/attention/operand_heads.h"
#include "analysis/replacement/ffn_ablation.h"
#include "base/common/file_io.h"
#include "base/common/status_macros.h"
#include "datasets/text/running_text.h"
#include "layers/attention/causal_attention.h"
#include "layers/replacement/sparse_replacement.h"
#include "models/hook_lookup.h"
#include "ops/hooks/hook_point.h"
#include "pipelines/train/replacement_metrics.h"

namespace sparse_layers::analysis {
namespace {

// Lorsa App. C (Fig. 10): each QK group's W_Q and W_K spectra and effective
// ranks beside its OV heads' best induction score (heads scored on >= 10
// probe positions), and the fit's rank correlations over its scored groups.
// A group's induction_rank orders the scored groups by that score (1: the
// most induction-like; 0: no head scored), so that seeds, whose groups are
// unrelated, can be averaged rank by rank.
void AppendQkRank(const layers::LorsaImpl& lorsa, const ZPatternScores& scores,
                  const LorsaFit& fit, bool strongest_block,
                  LorsaTables& tables) {
  torch::NoGradGuard no_grad;
  const std::string key =
      absl::StrCat(fit.loaded.config.runtime().seed(), ",", fit.name, ",",
                   fit.spec.layer(), ",", fit.spec.top_k());
  const int64_t groups = lorsa.options().qk_heads;
  const int64_t group_size = lorsa.group_size();
  std::vector<int> scored(groups, 0);
  std::vector<double> best(groups, 0);
  for (int64_t h = 0; h < groups * group_size; ++h) {
    if (scores.induction_count[h].item<int64_t>() < 10) continue;
    const int64_t g = h / group_size;
    best[g] = std::max(best[g], scores.induction[h].item<double>());
    ++scored[g];
  }
  std::vector<int64_t> order;
  for (int64_t g = 0; g < groups; ++g) {
    if (scored[g] > 0) order.push_back(g);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return best[a] > best[b]; });
  std::vector<int> induction_rank(groups, 0);
  for (size_t r = 0; r < order.size(); ++r) induction_rank[order[r]] = r + 1;

  std::vector<double> scored_rank, scored_induction, rank_q, rank_k;
  for (int64_t g = 0; g < groups; ++g) {
    const torch::Tensor w_q = lorsa.w_q[g], w_k = lorsa.w_k[g];
    for (const auto& [matrix, weights] :
         {std::pair<const char*, torch::Tensor>{"w_q", w_q}, {"w_k", w_k}}) {
      const torch::Tensor relative = RelativeSingularValues(weights);
      for (int64_t i = 0; i < relative.numel(); ++i) {
        absl::StrAppendFormat(&tables.qk_spectra, "%s,%d,%d,%s,%d,%.6f,%d\n",
                              key, g, induction_rank[g], matrix, i + 1,
                              relative[i].item<double>(),
                              strongest_block ? 1 : 0);
      }
    }
    const double q = EffectiveRank(w_q), k = EffectiveRank(w_k);
    const double qk = EffectiveRank(w_q.matmul(w_k.t()));
    rank_q.push_back(q);
    rank_k.push_back(k);
    absl::StrAppendFormat(&tables.qk_rank, "%s,%d,%.4f,%.4f,%.4f,%d,%s,%d\n",
                          key, g, q, k, qk, scored[g],
                          scored[g] > 0 ? absl::StrFormat("%.4f", best[g]) : "",
                          induction_rank[g]);
    if (scored[g] > 0) {
      scored_rank.push_back(qk);
      scored_induction.push_back(best[g]);
    }
  }
  // Fewer than 3 groups give no rank correlation worth an estimate: no row.
  if (scored_rank.size() < 3) return;
  const auto vec = [](const std::vector<double>& v) {
    return torch::tensor(v, torch::kDouble);
  };
  absl::StrAppendFormat(
      &tables.qk_rank_summary, "%s,%d,%.4f,%.4f,%d\n", key, scored_rank.size(),
      SpearmanCorrelation(vec(scored_rank), vec(scored_induction)),
      SpearmanCorrelation(vec(rank_q), vec(rank_k)), strongest_block ? 1 : 0);
}

// Attention input of `block` on `tokens` (the cached quantity).
absl::StatusOr<torch::Tensor> AttentionInput(layers::GptImpl& model, int block,
                                             const torch::Tensor& tokens) {
  std::vector<torch::Tensor> captured;
  ASSIGN_OR_RETURN(layers::HookPoint * hook,
                   layers::RequireHook(
                       model, absl::StrCat("blocks.", block, ".attn.hook_in")));
  hook->Add(layers::CaptureHook(&captured));
  model.Hidden(tokens);
  model.ClearHooks();
  return captured.at(0);
}

// One listing line: the 5 tokens whose logits the head's output direction
// w_o raises most and the 5 it lowers most, directly through the unembedding
// (DirectLogitEffect; Lorsa arXiv:2504.20938 Fig. 11's logit differences).
std::string LogitLine(layers::GptImpl& model, const torch::Tensor& w_o,
                      const datasets::Tokenizer& tok) {
  const torch::Tensor effect =
      DirectLogitEffect(w_o, model.UnembeddingWeight(),
                        model.named_parameters()["final_norm.weight"],
                        /*layer_norm=*/!model.options().rms_norm);
  const int64_t top = std::min<int64_t>(5, effect.size(0));
  std::string line = "  logits: promotes";
  for (const bool promoted : {true, false}) {
    const auto [values, ids] = effect.topk(top, -1, /*largest=*/promoted);
    if (!promoted) absl::StrAppend(&line, " | suppresses");
    for (int64_t i = 0; i < top; ++i) {
      absl::StrAppendFormat(
          &line, "%s '%s' %+.3g", i > 0 ? "," : "",
          datasets::PieceInRunningText(tok, ids[i].item<int>()),
          values[i].item<double>());
    }
  }
  return line + "\n";
}

}  // namespace

absl::StatusOr<torch::Tensor> ProbeTokens(const datasets::Tokenizer& tokenizer,
                                          int64_t n, int64_t sequences,
                                          const std::string& words_path) {
  std::vector<int64_t> pool;
  if (const std::string& path = words_path; !path.empty()) {
    ASSIGN_OR_RETURN(const std::string text, ReadFileToString(path));
    for (absl::string_view word :
         absl::StrSplit(text, '\n', absl::SkipWhitespace())) {
      const std::vector<int> ids = tokenizer.EncodeWord(std::string(word));
      if (ids.size() != 1) {
        return absl::InvalidArgumentError(absl::StrCat(
            path, ": '", word, "' is not one piece of the tokenizer"));
      }
      pool.push_back(ids[0]);
    }
    if (pool.size() < 2) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": fewer than 2 probe words"));
    }
  } else {
    for (int id = 0; id < tokenizer.vocab_size(); ++id) {
      if (!tokenizer.WordOfPiece(id).empty()) {
        pool.push_back(id);
      }
    }
  }
  torch::manual_seed(1);
  const torch::Tensor pieces = torch::tensor(pool, torch::kLong);
  const torch::Tensor span = pieces.index(
      {torch::randint(static_cast<int64_t>(pool.size()), {sequences, n})});
  // A text's first piece: the tokenizer's begin-of-text, else end-of-text
  // (GPT-2's and our BPE's document separator).
  const int first =
      tokenizer.bos_id() >= 0 ? tokenizer.bos_id() : tokenizer.eos_id();
  return torch::cat(
      {torch::full({sequences, 1}, first, torch::kLong), span, span}, 1);
}

absl::StatusOr<std::vector<LorsaFit>> LoadLorsaFits(
    const std::vector<std::string>& paths) {
  ASSIGN_OR_RETURN(
      std::vector<layers::LoadedReplacement> loaded,
      layers::LoadReplacements(paths, layers::FitKind::kAttentionSite));
  std::vector<LorsaFit> fits;
  for (layers::LoadedReplacement& replacement : loaded) {
    LorsaFit fit;
    fit.spec = replacement.spec;
    fit.name = replacement.loaded.config.name();
    fit.method = fit.spec.ffn() == "lorsa" ? "lorsa" : "sae";
    fit.loaded = std::move(replacement.loaded);
    fits.push_back(std::move(fit));
  }
  // Rows by method, block, K and QK heads, the order the section's tables show
  // them.
  std::sort(fits.begin(), fits.end(), [](const LorsaFit& a, const LorsaFit& b) {
    return std::make_tuple(a.method, a.spec.layer(), a.spec.top_k(),
                           a.spec.qk_heads()) <
           std::make_tuple(b.method, b.spec.layer(), b.spec.top_k(),
                           b.spec.qk_heads());
  });
  return fits;
}

int MostFrequentKey(const std::map<int, std::set<int>>& values_of_key) {
  int best = -1;
  size_t size = 0;
  for (const auto& [key, values] : values_of_key) {
    if (values.size() > size) best = key, size = values.size();
  }
  return best;
}

absl::StatusOr<LorsaTables> EvaluateLorsa(
    const layers::LoadedModel& base, const datasets::Tokenizer& tok,
    const datasets::TokenShardSet& tokens,
    const std::map<int, std::unique_ptr<datasets::ActivationSet>>& caches,
    std::vector<LorsaFit>& fits, const LorsaEvaluationOptions& options) {
  torch::NoGradGuard no_grad;
  layers::GptImpl& model = *base.model;
  const int length = options.sequence_length > 0
                         ? options.sequence_length
                         : model.options().context_length;
  if (length > model.options().context_length) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--sequence_length ", length, " exceeds the base model's context of ",
        model.options().context_length));
  }
  // The fits' seed (the seed column): each seed's fits of a pretrained base
  // share that base, whose own config carries no seed of the study.
  int64_t seed = base.config.runtime().seed();
  for (size_t i = 0; i < fits.size(); ++i) {
    const int64_t fit_seed = fits[i].loaded.config.runtime().seed();
    if (i == 0) seed = fit_seed;
    if (fit_seed != seed) {
      return absl::InvalidArgumentError(
          absl::StrCat(fits[i].name, " has seed ", fit_seed, ", ", fits[0].name,
                       " seed ", seed, ": one seed per run"));
    }
  }
  ASSIGN_OR_RETURN(const datasets::BatchSampler sampler,
                   datasets::BatchSampler::Create(&tokens, 16, length, seed));
  LorsaTables tables;
  const int batches = options.batches;
  // The K sweep's block (Lorsa Fig. 2: the block fitted at the most K) and
  // the per-layer K (Fig. 3: the K fitted at the most blocks); ties go to the
  // smallest. The claims select their rows by these marks, at every scale.
  std::map<int, std::set<int>> ks_of_block, blocks_of_k;
  for (const LorsaFit& fit : fits) {
    if (fit.method != "lorsa") continue;
    ks_of_block[fit.spec.layer()].insert(fit.spec.top_k());
    blocks_of_k[fit.spec.top_k()].insert(fit.spec.layer());
  }
  const int grid_block = MostFrequentKey(ks_of_block);
  const int layer_k = MostFrequentKey(blocks_of_k);

  // fits.csv
  const double ce_base = train::MeanCrossEntropy(model, sampler, batches);
  std::map<int, double> ce_zero;
  std::string& fits_csv = tables.fits;
  fits_csv =
      "seed,name,method,block,k,units,qk_heads,qk_heads_per_mhsa_head,"
      "qk_dim,qk_dim_per_head_dim,qk_init,parameters,fvu,l0,dead_fraction,"
      "ce_base,ce_zero_ablated,ce_spliced,ce_recovered,on_k_grid,at_layer_k\n";
  const int64_t head_dim = model.options().d_model / model.options().n_heads;
  for (LorsaFit& fit : fits) {
    const int block = fit.spec.layer();
    if (!caches.count(block)) {
      return absl::InvalidArgumentError(
          absl::StrCat(fit.name, ": no --caches entry for block ", block));
    }
    const datasets::ActivationSet& cache = *caches.at(block);
    RETURN_IF_ERROR(cache.CheckSite(
        block, ".attn.", absl::StrCat("the --caches entry for ", fit.name)));
    const int64_t window = cache.manifest().sequence_length();
    if (!ce_zero.count(block)) {
      ASSIGN_OR_RETURN(
          ce_zero[block],
          ZeroAblated(model, absl::StrCat("blocks.", block, ".attn.hook_out"),
                      [&] {
                        return train::MeanCrossEntropy(model, sampler, batches);
                      }));
    }
    layers::GptImpl& spliced = *fit.loaded.model;
    train::ActivationFit metrics;
    int64_t parameters = 0, units = 0, qk_heads = 0, qk_dim = 0;
    if (layers::Lorsa lorsa = spliced.LorsaReplacement()) {
      metrics = train::EvaluateLorsaOnActivations(*lorsa, cache, window,
                                                  options.windows, 8);
      for (const torch::Tensor& p : lorsa->parameters())
        parameters += p.numel();
      units = lorsa->options().ov_heads;
      qk_heads = lorsa->options().qk_heads;
      qk_dim = lorsa->options().qk_dim;
    } else {
      auto sae = std::dynamic_pointer_cast<layers::SparseReplacementImpl>(
          spliced.ReplacementLayer());
      if (!sae) return absl::InternalError(fit.name + " has no SAE");
      metrics = train::EvaluateOnActivations(*sae, cache, /*on_output=*/true,
                                             options.windows * window, 4096);
      for (const torch::Tensor& p : sae->parameters()) parameters += p.numel();
      units = sae->units();
    }
    const double ce = train::MeanCrossEntropy(spliced, sampler, batches);
    absl::StrAppendFormat(
        &fits_csv,
        "%d,%s,%s,%d,%d,%d,%d,%g,%d,%g,%s,%d,%.6f,%.3f,%.6f,%.6f,%.6f,%.6f,%."
        "6f,%d,%d\n",
        fit.loaded.config.runtime().seed(), fit.name, fit.method, block,
        fit.spec.top_k(), units, qk_heads,
        static_cast<double>(qk_heads) / model.options().n_heads, qk_dim,
        static_cast<double>(qk_dim) / head_dim,
        config::FfnReplacement::QkInit_Name(fit.spec.qk_init()), parameters,
        metrics.fvu, metrics.l0, metrics.dead_fraction, ce_base, ce_zero[block],
        ce, train::CeRecovered(ce_base, ce_zero[block], ce),
        block == grid_block ? 1 : 0, fit.spec.top_k() == layer_k ? 1 : 0);
    std::fprintf(stderr, "evaluate_lorsa: %s FVU %.4f, CE %.4f (base %.4f)\n",
                 fit.name.c_str(), metrics.fvu, ce, ce_base);
  }

  if (options.fits_only) return tables;

  // errors.csv: how alike Lorsa's and the SAE's per-token errors are at each
  // block fitted by both at the per-layer K (App. G, Figs. 14-15).
  tables.errors =
      "seed,block,k,tokens,error_cosine,error_cosine_shuffled,"
      "error_norm_correlation\n";
  std::map<int, std::pair<LorsaFit*, LorsaFit*>> pairs;  // (Lorsa, SAE)
  for (LorsaFit& fit : fits) {
    if (fit.spec.top_k() != layer_k) continue;
    auto& pair = pairs[fit.spec.layer()];
    (fit.method == "lorsa" ? pair.first : pair.second) = &fit;
  }
  for (const auto& [block, pair] : pairs) {
    if (pair.first == nullptr || pair.second == nullptr) continue;
    layers::Lorsa lorsa = pair.first->loaded.model->LorsaReplacement();
    auto sae = std::dynamic_pointer_cast<layers::SparseReplacementImpl>(
        pair.second->loaded.model->ReplacementLayer());
    if (!lorsa || !sae) continue;
    const datasets::ActivationSet& cache = *caches.at(block);
    const int64_t window = cache.manifest().sequence_length();
    const int64_t d = cache.d_out();
    const int64_t windows = std::min(options.windows, cache.rows() / window);
    std::vector<torch::Tensor> lorsa_errors, sae_errors;
    for (int64_t w = 0; w < windows; w += 8) {
      const int64_t end = std::min(windows, w + 8);
      auto [x, y] = cache.Range(w * window, end * window);
      lorsa_errors.push_back(
          lorsa->Run(x.view({end - w, window, -1}), lorsa->options().top_k)
              .output.reshape({-1, d}) -
          y);
      const layers::TopKCodes codes = sae->Encode(y, sae->options().top_k);
      sae_errors.push_back(sae->DecodeSparse(y, codes) - y);
    }
    const ErrorAgreement agreement =
        CompareErrors(torch::cat(lorsa_errors), torch::cat(sae_errors));
    absl::StrAppendFormat(&tables.errors, "%d,%d,%d,%d,%.6f,%.6f,%.6f\n", seed,
                          block, layer_k, agreement.tokens, agreement.cosine,
                          agreement.cosine_shuffled,
                          agreement.norm_correlation);
  }

  // attribution.csv: oblique projection on held-out cache windows.
  const int64_t mhsa_heads = model.options().n_heads;
  std::string& attribution_csv = tables.attribution;
  attribution_csv = "seed,name,block,k,head,active_tokens,effective_heads";
  for (int64_t m = 0; m < mhsa_heads; ++m) {
    absl::StrAppend(&attribution_csv, ",mhsa_", m);
  }
  absl::StrAppend(&attribution_csv, ",coefficient_sum\n");
  std::string& shares_csv = tables.attribution_shares;
  shares_csv = "seed,name,block,k,at_layer_k,original_heads,heads,share\n";
  for (LorsaFit& fit : fits) {
    layers::Lorsa lorsa = fit.loaded.model->LorsaReplacement();
    if (!lorsa) continue;
    const int block = fit.spec.layer();
    auto* mhsa = dynamic_cast<layers::CausalSelfAttentionImpl*>(
        model.blocks[block]->attention.get());
    if (mhsa == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("block ", block, " of the base model is not \"mha\""));
    }
    const datasets::ActivationSet& cache = *caches.at(block);
    const int64_t window = cache.manifest().sequence_length();
    const int64_t d = cache.d_in(), k = lorsa->options().top_k;
    HeadAttribution attribution(lorsa->options().ov_heads, mhsa_heads);
    const int64_t windows =
        std::min(options.attribution_windows, cache.rows() / window);
    for (int64_t w = 0; w < windows; w += 8) {
      const int64_t end = std::min(windows, w + 8);
      const torch::Tensor x =
          cache.Range(w * window, end * window).first.view({-1, window, d});
      const HeadOutputs heads = MhsaHeadOutputs(*mhsa, x);
      const layers::LorsaOutput out = lorsa->Run(x, k);
      const torch::Tensor active =
          std::get<1>(out.activations.abs().topk(k, -1)).reshape({-1, k});
      const torch::Tensor z =
          out.activations.reshape({-1, out.activations.size(-1)})
              .gather(1, active);  // (N, K)
      const torch::Tensor outputs =
          z.unsqueeze(-1) *
          lorsa->w_o.index_select(0, active.reshape({-1})).view({-1, k, d});
      attribution.Add(outputs, active,
                      heads.outputs.reshape({-1, mhsa_heads, d}));
    }
    const torch::Tensor contributions = attribution.Contributions();
    const torch::Tensor mean = attribution.MeanCoefficients();
    const torch::Tensor counts = attribution.ActiveCounts();
    const torch::Tensor effective = EffectiveHeadCounts(contributions);
    // Heads by the number of original heads they draw on (Fig. 13's bins).
    std::vector<int64_t> by_count(4, 0);
    int64_t attributed = 0;
    for (int64_t h = 0; h < contributions.size(0); ++h) {
      if (counts[h].item<int64_t>() < options.min_active) continue;
      const int64_t n = effective[h].item<int64_t>();
      ++by_count[std::clamp<int64_t>(n, 1, 4) - 1];
      ++attributed;
      absl::StrAppend(&attribution_csv, seed, ",", fit.name, ",", block, ",", k,
                      ",", h, ",", counts[h].item<int64_t>(), ",", n);
      for (int64_t m = 0; m < mhsa_heads; ++m) {
        absl::StrAppendFormat(&attribution_csv, ",%.4f",
                              contributions[h][m].item<double>());
      }
      absl::StrAppendFormat(&attribution_csv, ",%.4f\n",
                            mean[h].sum().item<double>());
    }
    if (attributed == 0) continue;  // No share of nothing.
    for (int c = 0; c < 4; ++c) {
      absl::StrAppendFormat(&shares_csv, "%d,%s,%d,%d,%d,%s,%d,%.6f\n", seed,
                            fit.name, block, k, k == layer_k ? 1 : 0,
                            c < 3 ? absl::StrCat(c + 1) : "4+", by_count[c],
                            static_cast<double>(by_count[c]) / attributed);
    }
  }

  // heads.csv: induction and previous-token scores on the probe sequences.
  // The probe (BOS + the span twice) must fit in the context.
  const int64_t period =
      std::min<int64_t>(options.probe_period, (length - 1) / 2);
  ASSIGN_OR_RETURN(
      const torch::Tensor probe,
      ProbeTokens(tok, period, options.probe_sequences, options.probe_words));
  std::string& heads_csv = tables.heads;
  heads_csv =
      "seed,model,kind,block,head,induction,previous_token,induction_positions,"
      "previous_token_positions\n";
  std::vector<torch::Tensor> patterns(model.blocks.size());
  for (size_t b = 0; b < model.blocks.size(); ++b) {
    ASSIGN_OR_RETURN(
        layers::HookPoint* const pattern,
        layers::RequireHook(model,
                            absl::StrCat("blocks.", b, ".attn.hook_pattern")));
    pattern->Add([&, b](const torch::Tensor& p) {
      patterns[b] = p;
      return p;
    });
  }
  const torch::Tensor probe_logits = model.forward(probe);
  model.ClearHooks();
  const int64_t sequences = probe.size(0);
  // Per probe sequence, so that the controls on the base model (it copies in
  // context; it has an induction head) get an interval over sequences.
  std::string& probe_csv = tables.probe;
  probe_csv = "seed,model,sequence,first_copy_loss,second_copy_loss\n";
  {
    // In-context copying: next-token loss inside the first copy of the span
    // against inside the second (the induction behaviour, Olsson et al.).
    const torch::Tensor nll =
        torch::nn::functional::cross_entropy(
            probe_logits.slice(1, 0, -1).flatten(0, 1),
            probe.slice(1, 1).flatten(),
            torch::nn::functional::CrossEntropyFuncOptions().reduction(
                torch::kNone))
            .view({sequences, -1});
    const torch::Tensor first = nll.slice(1, 1, period).mean(1);
    const torch::Tensor second = nll.slice(1, period + 1).mean(1);
    for (int64_t i = 0; i < sequences; ++i) {
      absl::StrAppendFormat(&probe_csv, "%d,base,%d,%.4f,%.4f\n", seed, i,
                            first[i].item<double>(), second[i].item<double>());
    }
  }
  // MHSA scores per head and per (head, sequence); the strongest induction
  // head is the one with the highest mean score over the probe.
  std::vector<torch::Tensor> induction_by_sequence, previous_by_sequence;
  int strongest_block = 0, strongest_head = 0;
  double strongest = -1;
  for (size_t b = 0; b < model.blocks.size(); ++b) {
    std::vector<torch::Tensor> induction, previous;
    for (int64_t i = 0; i < sequences; ++i) {
      const torch::Tensor pattern = patterns[b].slice(0, i, i + 1);
      induction.push_back(InductionScores(pattern, 1, period));
      previous.push_back(PreviousTokenScores(pattern));
    }
    induction_by_sequence.push_back(torch::stack(induction));  // (S, H)
    previous_by_sequence.push_back(torch::stack(previous));
    const torch::Tensor mean_induction = induction_by_sequence[b].mean(0);
    const torch::Tensor mean_previous = previous_by_sequence[b].mean(0);
    for (int64_t h = 0; h < mean_induction.size(0); ++h) {
      absl::StrAppendFormat(&heads_csv, "%d,base,mhsa,%d,%d,%.4f,%.4f,,\n",
                            seed, b, h, mean_induction[h].item<double>(),
                            mean_previous[h].item<double>());
      if (mean_induction[h].item<double>() > strongest) {
        strongest = mean_induction[h].item<double>();
        strongest_block = static_cast<int>(b), strongest_head = h;
      }
    }
  }
  std::string& probe_heads_csv = tables.probe_heads;
  probe_heads_csv =
      "seed,model,block,head,sequence,induction,previous_token,"
      "strongest_induction_head\n";
  std::string& induction_csv = tables.induction_heads;
  induction_csv =
      "seed,block,model,fit,best_induction,best_induction_head,"
      "best_previous_token,best_previous_token_head,scored_heads,"
      "induction_heads,strongest_mhsa_block\n";
  for (size_t b = 0; b < model.blocks.size(); ++b) {
    const torch::Tensor& induction = induction_by_sequence[b];
    const torch::Tensor& previous = previous_by_sequence[b];
    for (int64_t h = 0; h < induction.size(1); ++h) {
      for (int64_t i = 0; i < sequences; ++i) {
        absl::StrAppendFormat(
            &probe_heads_csv, "%d,base,%d,%d,%d,%.4f,%.4f,%d\n", seed, b, h, i,
            induction[i][h].item<double>(), previous[i][h].item<double>(),
            static_cast<int>(b) == strongest_block && h == strongest_head ? 1
                                                                          : 0);
      }
    }
    const torch::Tensor mean_induction = induction.mean(0);
    const torch::Tensor mean_previous = previous.mean(0);
    absl::StrAppendFormat(
        &induction_csv, "%d,%d,mhsa,base,%.4f,%d,%.4f,%d,%d,%d,%d\n", seed, b,
        mean_induction.max().item<double>(),
        mean_induction.argmax().item<int64_t>(),
        mean_previous.max().item<double>(),
        mean_previous.argmax().item<int64_t>(), mean_induction.size(0),
        (mean_induction >= 0.5).sum().item<int64_t>(),
        static_cast<int>(b) == strongest_block ? 1 : 0);
  }
  std::string& listing = tables.top_activations;
  tables.qk_spectra =
      "seed,name,block,k,qk_head,induction_rank,matrix,index,"
      "relative_singular_value,strongest_mhsa_block\n";
  tables.qk_rank =
      "seed,name,block,k,qk_head,effective_rank_q,effective_rank_k,"
      "effective_rank_qk,scored_heads,best_induction,induction_rank\n";
  tables.qk_rank_summary =
      "seed,name,block,k,scored_groups,rank_induction_spearman,"
      "q_k_rank_spearman,strongest_mhsa_block\n";
  for (LorsaFit& fit : fits) {
    layers::Lorsa lorsa = fit.loaded.model->LorsaReplacement();
    if (!lorsa) continue;
    const int block = fit.spec.layer();
    ASSIGN_OR_RETURN(const torch::Tensor probe_input,
                     AttentionInput(model, block, probe));
    const layers::LorsaOutput out =
        lorsa->Run(probe_input, lorsa->options().top_k);
    const ZPatternScores scores = LorsaZPatternScores(
        out.pattern, out.values, out.activations, 1, period);
    std::vector<std::pair<double, int64_t>> best_induction, best_previous;
    for (int64_t h = 0; h < scores.induction.size(0); ++h) {
      const int64_t n_ind = scores.induction_count[h].item<int64_t>();
      const int64_t n_prev = scores.previous_token_count[h].item<int64_t>();
      if (n_ind + n_prev == 0) continue;
      const double ind = scores.induction[h].item<double>();
      const double prev = scores.previous_token[h].item<double>();
      absl::StrAppendFormat(&heads_csv, "%d,%s,lorsa,%d,%d,%.4f,%.4f,%d,%d\n",
                            fit.loaded.config.runtime().seed(), fit.name, block,
                            h, ind, prev, n_ind, n_prev);
      if (n_ind >= 10) best_induction.push_back({ind, h});
      if (n_prev >= 10) best_previous.push_back({prev, h});
    }
    if (fit.spec.top_k() == layer_k) {
      AppendQkRank(*lorsa, scores, fit, block == strongest_block, tables);
    }
    if (fit.spec.top_k() == layer_k) {
      // Best heads among those active on >= 10 probe positions; a fit with
      // none scores 0 (no head of that kind found), head -1.
      const auto best = [](const std::vector<std::pair<double, int64_t>>& v) {
        return v.empty() ? std::pair<double, int64_t>{0.0, -1}
                         : *std::max_element(v.begin(), v.end());
      };
      int64_t above_half = 0;
      for (const auto& [score, head] : best_induction)
        above_half += score >= 0.5;
      absl::StrAppendFormat(
          &induction_csv, "%d,%d,lorsa,%s,%.4f,%d,%.4f,%d,%d,%d,%d\n",
          fit.loaded.config.runtime().seed(), block, fit.name,
          best(best_induction).first, best(best_induction).second,
          best(best_previous).first, best(best_previous).second,
          best_induction.size(), above_half, block == strongest_block ? 1 : 0);
    }
    // Top activations of the 3 best heads of each kind on held-out windows.
    const int listing_windows = options.listing_windows;
    ASSIGN_OR_RETURN(
        const datasets::BatchSampler listing_sampler,
        datasets::BatchSampler::Create(&tokens, listing_windows, length, 7));
    const datasets::TokenBatch batch = listing_sampler.EvalBatch(0, 1);
    const torch::Tensor held_out =
        torch::tensor(batch.inputs).view({listing_windows, length});
    ASSIGN_OR_RETURN(const torch::Tensor held_out_input,
                     AttentionInput(model, block, held_out));
    const torch::Tensor z = lorsa->Run(held_out_input, lorsa->options().top_k)
                                .activations;  // (W, T, H)
    using Ranked = std::vector<std::pair<double, int64_t>>;
    for (const auto& [kind, ranked] :
         std::vector<std::pair<const char*, Ranked*>>{
             {"induction", &best_induction},
             {"previous-token", &best_previous}}) {
      std::sort(ranked->rbegin(), ranked->rend());
      for (size_t r = 0; r < std::min<size_t>(3, ranked->size()); ++r) {
        const int64_t h = (*ranked)[r].second;
        absl::StrAppendFormat(&listing, "## %s head %d (%s score %.3f)\n",
                              fit.name, h, kind, (*ranked)[r].first);
        absl::StrAppend(&listing, LogitLine(model, lorsa->w_o[h], tok));
        const torch::Tensor head_z = z.select(2, h).reshape({-1});
        const auto top = head_z.topk(std::min<int64_t>(8, head_z.size(0)));
        for (int64_t i = 0; i < std::get<0>(top).size(0); ++i) {
          const double value = std::get<0>(top)[i].item<double>();
          if (value == 0) break;
          const int64_t flat = std::get<1>(top)[i].item<int64_t>();
          const int64_t w = flat / length, t = flat % length;
          absl::StrAppendFormat(
              &listing, "  z = %.3f  %s\n", value,
              datasets::MarkedContext(
                  tok,
                  absl::MakeConstSpan(batch.inputs).subspan(w * length, length),
                  t, /*before=*/12, /*after=*/0));
        }
      }
    }
  }

  // operand_heads.csv, operand_summary.csv, operand_grid.csv: arithmetic
  // operand heads (Sec. 6.2, Fig. 7, Table 4) of the per-layer-K Lorsas.
  constexpr int kOperandGrid = 50;          // a, b in 0..49, as planted.
  constexpr double kMinActiveShare = 0.05;  // A head silent on the grid: none.
  const std::vector<std::vector<int>> prompts =
      OperandPrompts(tok, kOperandGrid);
  ASSIGN_OR_RETURN(const SumLoss sum_loss,
                   SumContinuationLoss(model, tok, prompts, kOperandGrid));
  tables.operand_heads =
      "seed,name,block,operand,head,share_own,share_other,specificity,"
      "specificity_shuffled,specificity_init\n";
  struct Best {
    double specificity = -1, shuffled = -1, init = -1;
    bool init_seen = false;  // An untrained head qualified at some block.
    int block = -1;
    int64_t head = -1;
    torch::Tensor z;
  };
  std::array<Best, 2> best;
  for (LorsaFit& fit : fits) {
    if (fit.method != "lorsa" || fit.spec.top_k() != layer_k) continue;
    layers::Lorsa lorsa = fit.loaded.model->LorsaReplacement();
    if (!lorsa) continue;
    const int block = fit.spec.layer();
    // The base model's inputs at the block, read once for both Lorsas.
    ASSIGN_OR_RETURN(const OperandInputs inputs,
                     OperandAttentionInputs(model, block, prompts));
    const torch::Tensor z = OperandActivations(*lorsa, inputs, kOperandGrid);
    const std::array<OperandHead, 2> heads =
        MostSpecificHeads(z, kMinActiveShare);
    const std::array<double, 2> shuffled =
        ShuffledSpecificity(z, kMinActiveShare, static_cast<uint64_t>(seed));
    // The same Lorsa untrained (its initialisation, drawn anew): what training
    // adds is the difference.
    torch::manual_seed(static_cast<uint64_t>(seed) * 1000 + block);
    layers::LorsaImpl untrained(lorsa->options());
    {
      // As the trainer starts it: on inputs scaled to mean norm sqrt(d),
      // measured on the block's cache rows (replacement_objectives.cc).
      const torch::Tensor x = std::get<0>(caches.at(block)->Range(
          0, std::min<int64_t>(caches.at(block)->rows(), 16384)));
      untrained.FoldInputOutputScales(
          std::sqrt(static_cast<double>(x.size(1))) /
              x.norm(2, 1).mean().clamp_min(1e-12).item<double>(),
          1.0);
    }
    const torch::Tensor z_init =
        OperandActivations(untrained, inputs, kOperandGrid);
    const std::array<OperandHead, 2> init_heads =
        MostSpecificHeads(z_init, kMinActiveShare);
    for (int operand = 0; operand < 2; ++operand) {
      const OperandHead& head = heads[operand];
      if (head.head < 0) continue;
      absl::StrAppendFormat(
          &tables.operand_heads, "%d,%s,%d,op%d,%d,%.6f,%.6f,%.6f,%.6f,%.6f\n",
          seed, fit.name, block, operand + 1, head.head, head.own, head.other,
          head.specificity(), shuffled[operand],
          init_heads[operand].head < 0 ? 0.0
                                       : init_heads[operand].specificity());
      Best& b = best[operand];
      if (head.specificity() > b.specificity) {
        b.specificity = head.specificity();
        b.block = block;
        b.head = head.head;
        b.z = z.select(2, head.head);
      }
      b.shuffled = std::max(b.shuffled, shuffled[operand]);
      if (init_heads[operand].head >= 0) {
        b.init = b.init_seen
                     ? std::max(b.init, init_heads[operand].specificity())
                     : init_heads[operand].specificity();
        b.init_seen = true;
      }
    }
  }
  tables.operand_summary =
      "seed,model,operand,block,head,specificity,specificity_shuffled,"
      "specificity_init,sum_loss_true,sum_loss_shifted\n";
  tables.operand_grid = "seed,operand,block,head,op1,op2,z\n";
  for (int operand = 0; operand < 2; ++operand) {
    // Every operand's row (the sum losses do not depend on a head); no head
    // active on the grid: head -1, specificities 0.
    Best& b = best[operand];
    if (b.head < 0) b.specificity = b.shuffled = 0;
    if (!b.init_seen) b.init = 0;  // No untrained head is specific at all.
    absl::StrAppendFormat(&tables.operand_summary,
                          "%d,lorsa,op%d,%d,%d,%.6f,%.6f,%.6f,%.6f,%.6f\n",
                          seed, operand + 1, b.block, b.head, b.specificity,
                          b.shuffled, b.init, sum_loss.true_sum,
                          sum_loss.shifted_sum);
    if (b.head < 0) continue;
    const auto z = b.z.accessor<float, 2>();
    for (int a = 0; a < kOperandGrid; ++a) {
      for (int c = 0; c < kOperandGrid; ++c) {
        absl::StrAppendFormat(&tables.operand_grid,
                              "%d,op%d,%d,%d,%d,%d,%.5f\n", seed, operand + 1,
                              b.block, b.head, a, c, z[a][c]);
      }
    }
  }

  return tables;
}

}  // namespace sparse_layers::analysis
