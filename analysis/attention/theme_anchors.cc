#include "analysis/attention/theme_anchors.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "analysis/attention/per_layer_lorsas.h"
#include "base/common/status_macros.h"
#include "datasets/text/running_text.h"
#include "models/hook_lookup.h"
#include "ops/hooks/hook_point.h"

namespace sparse_layers::analysis {
namespace {

constexpr char kHeadsHeader[] =
    "seed,block,k,head,domain,selectivity_0,selectivity_1,persistence_0,"
    "persistence_1,reach_0,reach_1,sink_share_0,sink_share_1,active_0,"
    "active_1,candidate\n";
constexpr char kSummaryHeader[] =
    "seed,sources,chance,candidates,best_block,best_head,best_domain,"
    "best_choice_selectivity,best_selectivity,shuffled_candidates,"
    "shuffled_best_selectivity,local_selectivity,found,left_out\n";
constexpr int64_t kWindowsPerBatch = 16;

// The candidate with the highest half-0 selectivity over every block.
struct Best {
  int64_t candidates = 0;
  int block = -1;
  int64_t head = -1, domain = -1;
  double choice_selectivity = -1, selectivity = 0;  // Halves 0 and 1.
};

void Consider(const HeadThemes& themes, const torch::Tensor& candidate,
              int block, Best& best) {
  for (int64_t h = 0; h < candidate.size(0); ++h) {
    if (!candidate[h].item<bool>()) continue;
    ++best.candidates;
    const double choice = themes.selectivity[0][h].item<double>();
    if (choice > best.choice_selectivity) {
      best = {best.candidates,
              block,
              h,
              themes.domain[h].item<int64_t>(),
              choice,
              themes.selectivity[1][h].item<double>()};
    }
  }
}

// Runs `model` on `windows` in batches; `each` gets every fitted block's
// Lorsa output of the batch.
absl::Status ForEachBatch(
    layers::GptImpl& model, const PerLayerLorsas& per_layer,
    const torch::Tensor& windows,
    const std::function<void(size_t block, const layers::LorsaOutput&)>& each) {
  const size_t blocks = model.blocks.size();
  std::vector<std::vector<torch::Tensor>> inputs(blocks);
  const absl::Cleanup clear_hooks = [&model] { model.ClearHooks(); };
  for (size_t b = 0; b < blocks; ++b) {
    if (!per_layer.by_block[b]) continue;
    ASSIGN_OR_RETURN(layers::HookPoint * hook,
                     layers::RequireHook(
                         model, absl::StrCat("blocks.", b, ".attn.hook_in")));
    hook->Add(layers::CaptureHook(&inputs[b]));
  }
  for (int64_t w = 0; w < windows.size(0); w += kWindowsPerBatch) {
    model.Hidden(
        windows.slice(0, w, std::min(windows.size(0), w + kWindowsPerBatch)));
    for (size_t b = 0; b < blocks; ++b) {
      const layers::Lorsa& lorsa = per_layer.by_block[b];
      if (!lorsa) continue;
      each(b, lorsa->Run(inputs[b].at(0), lorsa->options().top_k));
      inputs[b].clear();
    }
  }
  return absl::OkStatus();
}

// `window` as text with the head's active positions [[marked]], and the keys
// it reads most (largest A(t, s) |v(s)| per active query).
std::string Example(const layers::LorsaImpl& lorsa,
                    const layers::LorsaOutput& out, int64_t head,
                    const torch::Tensor& window,
                    const datasets::Tokenizer& tokenizer,
                    const ThemeAnchorOptions& options) {
  const torch::Tensor z = out.activations[0].select(-1, head);  // (T)
  const torch::Tensor read = out.pattern[0][lorsa.GroupOf(head)] *
                             out.values[0].select(-1, head).abs().unsqueeze(0);
  const int64_t length = window.size(0);
  const int64_t shown = std::min<int64_t>(length, options.listing_tokens);
  std::string text;
  std::map<int64_t, std::pair<int, double>> keys;  // id: count, distance sum.
  for (int64_t t = 0; t < length; ++t) {
    const bool active = t > 0 && z[t].item<double>() > 0;
    if (t < shown) {
      absl::StrAppend(
          &text, active ? "[[" : "",
          datasets::PieceInRunningText(
              tokenizer, static_cast<int>(window[t].item<int64_t>())),
          active ? "]]" : "");
    }
    if (!active) continue;
    const int64_t s = read[t].slice(0, 0, t + 1).argmax().item<int64_t>();
    auto& [count, distance] = keys[window[s].item<int64_t>()];
    ++count;
    distance += static_cast<double>(t - s);
  }
  std::vector<std::pair<int, int64_t>> ranked;
  for (const auto& [id, entry] : keys) ranked.emplace_back(-entry.first, id);
  std::sort(ranked.begin(), ranked.end());
  std::vector<std::string> most;
  for (size_t i = 0; i < std::min<size_t>(5, ranked.size()); ++i) {
    const auto& [count, distance] = keys[ranked[i].second];
    most.push_back(
        absl::StrFormat("\"%s\" (%d, %.1f back)",
                        datasets::PieceInRunningText(
                            tokenizer, static_cast<int>(ranked[i].second)),
                        count, distance / count));
  }
  return absl::StrCat(
      "  text (first ", shown, " of ", length, " tokens, active [[marked]]):",
      absl::StrReplaceAll(text, {{datasets::kWordStart, " "}, {"\n", " "}}),
      "\n  reads most: ", most.empty() ? "-" : absl::StrJoin(most, ", "), "\n");
}

}  // namespace

HeadWindowSums WindowSums(const layers::LorsaImpl& lorsa,
                          const layers::LorsaOutput& out) {
  const int64_t batch = out.activations.size(0);
  const int64_t length = out.activations.size(1);
  const int64_t heads = out.activations.size(2);
  const int64_t groups = lorsa.options().qk_heads;
  // (B, T, H) <-> (B, H_QK, T, G): head h is column h % G of group h / G.
  const auto grouped = [&](const torch::Tensor& x) {
    return x.view({batch, length, groups, heads / groups})
        .permute({0, 2, 1, 3});
  };
  const auto by_head = [&](const torch::Tensor& x) {
    return x.permute({0, 2, 1, 3}).reshape({batch, length, heads});
  };
  const torch::Tensor active = (out.activations > 0).to(torch::kFloat);
  const torch::Tensor position =
      torch::arange(length, out.values.options()).view({1, length, 1});
  const torch::Tensor magnitude = out.values.abs();
  // Keys s >= 1: sum_s A(t, s) |v(s)| and sum_s A(t, s) |v(s)| s.
  const torch::Tensor to_words = out.pattern.slice(3, 1);
  const torch::Tensor read =
      by_head(torch::matmul(to_words, grouped(magnitude).slice(2, 1)));
  const torch::Tensor read_position = by_head(
      torch::matmul(to_words, grouped(magnitude * position).slice(2, 1)));
  const torch::Tensor sink =
      by_head(out.pattern.select(3, 0).unsqueeze(-1) *
              grouped(magnitude).select(2, 0).unsqueeze(2));
  const auto summed = [&](const torch::Tensor& x) {
    return (x * active).slice(1, 1).sum(1).to(torch::kDouble);
  };
  return {summed(out.activations), summed(torch::ones_like(active)),
          summed(read), summed(position * read - read_position), summed(sink)};
}

HeadThemes ScoreThemes(const HeadWindowSums& sums,
                       const torch::Tensor& window_source,
                       const torch::Tensor& window_half, int64_t sources,
                       int64_t positions) {
  const int64_t heads = sums.z.size(1);
  const torch::Tensor cell = window_source * 2 + window_half;  // (W)
  const auto by_cell = [&](const torch::Tensor& x) {           // (S, 2, H)
    return torch::zeros({2 * sources, heads}, x.options())
        .index_add_(0, cell, x)
        .view({sources, 2, heads});
  };
  const torch::Tensor tokens =
      (torch::bincount(cell, {}, 2 * sources).to(torch::kDouble) * positions)
          .view({sources, 2, 1})
          .expand({sources, 2, heads});
  const torch::Tensor mean_z = by_cell(sums.z) / tokens.clamp_min(1);
  HeadThemes themes;
  const torch::Tensor first = mean_z.select(1, 0);  // (S, H)
  themes.domain = torch::where(first.sum(0) > 0, first.argmax(0),
                               torch::full({heads}, -1, torch::kLong));
  const torch::Tensor index =
      themes.domain.clamp_min(0).view({1, 1, heads}).expand({1, 2, heads});
  const auto at_domain = [&](const torch::Tensor& x) {  // (S, 2, H) -> (2, H)
    return x.gather(0, index).squeeze(0);
  };
  const auto ratio = [](const torch::Tensor& a, const torch::Tensor& b) {
    return torch::where(b > 0, a / b, torch::zeros_like(a));
  };
  themes.selectivity = ratio(at_domain(mean_z), mean_z.sum(0));
  themes.active = at_domain(by_cell(sums.active));
  themes.persistence = ratio(themes.active, at_domain(tokens));
  const torch::Tensor read = at_domain(by_cell(sums.read));
  const torch::Tensor sink = at_domain(by_cell(sums.sink));
  themes.reach = ratio(at_domain(by_cell(sums.distance)), read);
  themes.sink_share = ratio(sink, read + sink);
  return themes;
}

torch::Tensor Candidates(const HeadThemes& themes,
                         const ThemeAnchorOptions& options) {
  return (themes.domain >= 0) &
         (themes.active[0] >= static_cast<double>(options.min_active)) &
         (themes.persistence[0] >= options.min_persistence) &
         (themes.reach[0] >= options.min_reach) &
         (themes.sink_share[0] <= options.max_sink_share);
}

torch::Tensor PermuteWithinHalves(const torch::Tensor& labels,
                                  const torch::Tensor& half, int64_t seed) {
  torch::Generator generator = at::detail::createCPUGenerator(seed);
  torch::Tensor permuted = labels.clone();
  for (int64_t h = 0; h < 2; ++h) {
    const torch::Tensor index = torch::nonzero(half == h).squeeze(1);
    const torch::Tensor order =
        torch::randperm(index.size(0), generator, torch::kLong);
    permuted.index_put_({index}, labels.index({index.index({order})}));
  }
  return permuted;
}

torch::Tensor LocalZ(const layers::LorsaImpl& lorsa,
                     const layers::LorsaOutput& out, int64_t head,
                     int64_t keys) {
  const int64_t length = out.activations.size(1);
  const torch::Tensor query = torch::arange(length).view({length, 1});
  const torch::Tensor key = torch::arange(length).view({1, length});
  const torch::Tensor band =
      ((key <= query) & (key > query - keys)).to(out.pattern.scalar_type());
  const torch::Tensor local =
      out.pattern.select(1, lorsa.GroupOf(head)) * band;  // (B, T, T)
  const torch::Tensor z =
      torch::matmul(local, out.values.select(-1, head).unsqueeze(-1))
          .squeeze(-1) /
      local.sum(-1).clamp_min(1e-12);
  return torch::relu(z) * (out.activations.select(-1, head) > 0);
}

absl::StatusOr<ThemeAnchorTables> FindThemeAnchors(
    const layers::LoadedModel& base, const datasets::Tokenizer& tokenizer,
    const std::vector<datasets::DomainTokens>& domains,
    std::vector<LorsaFit>& fits, const ThemeAnchorOptions& options) {
  layers::GptImpl& model = *base.model;
  model.eval();
  torch::NoGradGuard no_grad;
  ASSIGN_OR_RETURN(const PerLayerLorsas per_layer,
                   LorsasAtPerLayerK(fits, model.blocks.size()));
  for (const layers::Lorsa& lorsa : per_layer.by_block) {
    if (lorsa && !lorsa->options().relu) {
      return absl::InvalidArgumentError(
          "theme anchors read ReLU'd z (Lorsa App. B.4); a fit has relu off");
    }
  }
  const int64_t length =
      FitWindowLength(model.options().context_length, options.sequence_length);

  // Whole windows of each source's halves; a source without one in either
  // half is left out.
  std::vector<std::string> sources, left_out;
  std::vector<torch::Tensor> windows;
  std::vector<int64_t> window_source, window_half;
  for (const datasets::DomainTokens& domain : domains) {
    const int64_t first =
        static_cast<int64_t>(domain.halves[0].size()) / length;
    const int64_t second =
        static_cast<int64_t>(domain.halves[1].size()) / length;
    if (first == 0 || second == 0) {
      left_out.push_back(domain.domain);
      continue;
    }
    for (int64_t h = 0; h < 2; ++h) {
      const std::vector<int>& ids = domain.halves[h];
      const int64_t n = h == 0 ? first : second;
      windows.push_back(
          torch::tensor(
              std::vector<int64_t>(ids.begin(), ids.begin() + n * length),
              torch::kLong)
              .view({n, length}));
      window_source.insert(window_source.end(), n,
                           static_cast<int64_t>(sources.size()));
      window_half.insert(window_half.end(), n, h);
    }
    sources.push_back(domain.domain);
  }
  const int64_t source_count = static_cast<int64_t>(sources.size());
  const double chance = 1.0 / std::max<int64_t>(source_count, 1);
  const std::string left_out_names =
      left_out.empty() ? "-" : absl::StrJoin(left_out, ";");
  ThemeAnchorTables tables{kHeadsHeader, kSummaryHeader, ""};
  const auto summary_row = [&](const Best& best, double shuffled_candidates,
                               double shuffled_selectivity, double local) {
    const bool found = best.block >= 0;
    absl::StrAppendFormat(
        &tables.summary,
        "%d,%d,%.6f,%d,%d,%d,%s,%.6f,%.6f,%.2f,%.6f,%.6f,%d,%s\n",
        per_layer.seed, source_count, chance, best.candidates, best.block,
        best.head, found ? sources[best.domain] : "-",
        found ? best.choice_selectivity : NAN, found ? best.selectivity : NAN,
        shuffled_candidates, shuffled_selectivity, local, found ? 1 : 0,
        left_out_names);
  };
  if (source_count < 2) {
    summary_row(Best(), NAN, NAN, NAN);
    tables.examples = absl::StrCat(
        "seed ", per_layer.seed, ": fewer than two sources with a whole ",
        length, "-token window in each half (left out: ", left_out_names,
        ")\n");
    return tables;
  }
  const torch::Tensor all = torch::cat(windows);
  const torch::Tensor source = torch::tensor(window_source, torch::kLong);
  const torch::Tensor half = torch::tensor(window_half, torch::kLong);

  // Per block, the window sums of its Lorsa's heads.
  const size_t blocks = model.blocks.size();
  std::vector<std::vector<HeadWindowSums>> parts(blocks);
  RETURN_IF_ERROR(ForEachBatch(
      model, per_layer, all, [&](size_t b, const layers::LorsaOutput& out) {
        parts[b].push_back(WindowSums(*per_layer.by_block[b], out));
      }));
  std::vector<HeadWindowSums> sums(blocks);
  for (size_t b = 0; b < blocks; ++b) {
    if (parts[b].empty()) continue;
    const auto joined = [&](torch::Tensor HeadWindowSums::*field) {
      std::vector<torch::Tensor> rows;
      for (const HeadWindowSums& part : parts[b]) rows.push_back(part.*field);
      return torch::cat(rows);
    };
    sums[b] = {joined(&HeadWindowSums::z), joined(&HeadWindowSums::active),
               joined(&HeadWindowSums::read), joined(&HeadWindowSums::distance),
               joined(&HeadWindowSums::sink)};
  }

  // Sources as labelled: every head's row, and the best candidate.
  Best best;
  for (size_t b = 0; b < blocks; ++b) {
    if (!sums[b].z.defined()) continue;
    const HeadThemes themes =
        ScoreThemes(sums[b], source, half, source_count, length - 1);
    const torch::Tensor candidate = Candidates(themes, options);
    Consider(themes, candidate, static_cast<int>(b), best);
    for (int64_t h = 0; h < candidate.size(0); ++h) {
      const int64_t domain = themes.domain[h].item<int64_t>();
      const auto both = [&](const torch::Tensor& x) {
        return std::make_pair(x[0][h].item<double>(), x[1][h].item<double>());
      };
      const auto [selectivity0, selectivity1] = both(themes.selectivity);
      const auto [persistence0, persistence1] = both(themes.persistence);
      const auto [reach0, reach1] = both(themes.reach);
      const auto [sink0, sink1] = both(themes.sink_share);
      const auto [active0, active1] = both(themes.active);
      absl::StrAppendFormat(
          &tables.heads,
          "%d,%d,%d,%d,%s,%.6f,%.6f,%.6f,%.6f,%.4f,%.4f,%.6f,%.6f,%d,%d,%d\n",
          per_layer.seed, b, per_layer.top_k, h,
          domain < 0 ? "-" : sources[domain], selectivity0, selectivity1,
          persistence0, persistence1, reach0, reach1, sink0, sink1,
          static_cast<int64_t>(active0), static_cast<int64_t>(active1),
          candidate[h].item<bool>() ? 1 : 0);
    }
  }
  // The same selection with sources shuffled, a draw without a candidate at
  // chance.
  double shuffled_candidates = 0, shuffled_selectivity = 0;
  for (int r = 0; r < options.permutations; ++r) {
    const torch::Tensor shuffled =
        PermuteWithinHalves(source, half, per_layer.seed * 1000 + r);
    Best draw;
    for (size_t b = 0; b < blocks; ++b) {
      if (!sums[b].z.defined()) continue;
      const HeadThemes themes =
          ScoreThemes(sums[b], shuffled, half, source_count, length - 1);
      Consider(themes, Candidates(themes, options), static_cast<int>(b), draw);
    }
    shuffled_candidates += static_cast<double>(draw.candidates);
    shuffled_selectivity += draw.block >= 0 ? draw.selectivity : chance;
  }
  shuffled_candidates /= std::max(options.permutations, 1);
  shuffled_selectivity /= std::max(options.permutations, 1);
  if (best.block < 0) {
    summary_row(best, shuffled_candidates, shuffled_selectivity, NAN);
    tables.examples = absl::StrCat("seed ", per_layer.seed,
                                   ": no head meets the candidate floors\n");
    return tables;
  }

  // The best head on half 1 with its attention cut to the last keys, and its
  // most active half-1 window of its source.
  const layers::LorsaImpl& lorsa = *per_layer.by_block[best.block];
  const torch::Tensor second = torch::nonzero(half == 1).squeeze(1);
  PerLayerLorsas only_best;
  only_best.by_block.assign(blocks, layers::Lorsa(nullptr));
  only_best.by_block[best.block] = per_layer.by_block[best.block];
  std::vector<torch::Tensor> local_sums;
  RETURN_IF_ERROR(ForEachBatch(
      model, only_best, all.index_select(0, second),
      [&](size_t, const layers::LorsaOutput& out) {
        local_sums.push_back(LocalZ(lorsa, out, best.head, options.local_keys)
                                 .slice(1, 1)
                                 .sum(1)
                                 .to(torch::kDouble));
      }));
  const torch::Tensor local_mean =
      torch::zeros({source_count}, torch::kDouble)
          .index_add_(0, source.index_select(0, second),
                      torch::cat(local_sums)) /
      torch::bincount(source.index_select(0, second), {}, source_count)
          .to(torch::kDouble)
          .clamp_min(1);
  const double local_total = local_mean.sum().item<double>();
  const double local =
      local_total > 0 ? local_mean[best.domain].item<double>() / local_total
                      : 0;
  summary_row(best, shuffled_candidates, shuffled_selectivity, local);

  const torch::Tensor mine =
      torch::nonzero((source == best.domain) & (half == 1)).squeeze(1);
  const int64_t window =
      mine[sums[best.block].z.index({mine}).select(1, best.head).argmax()]
          .item<int64_t>();
  std::string example;
  RETURN_IF_ERROR(ForEachBatch(model, only_best, all[window].unsqueeze(0),
                               [&](size_t, const layers::LorsaOutput& out) {
                                 example =
                                     Example(lorsa, out, best.head, all[window],
                                             tokenizer, options);
                               }));
  tables.examples = absl::StrFormat(
      "seed %d: block %d head %d, source %s: on the held-out half selectivity "
      "%.3f (chance %.3f; the same choice with sources shuffled %.3f; its "
      "attention cut to the last %d keys %.3f), the best of %d candidates\n%s",
      per_layer.seed, best.block, best.head, sources[best.domain],
      best.selectivity, chance, shuffled_selectivity, options.local_keys, local,
      best.candidates, example);
  return tables;
}

}  // namespace sparse_layers::analysis
