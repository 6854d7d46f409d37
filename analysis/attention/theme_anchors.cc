#include "analysis/attention/theme_anchors.h"

#include <algorithm>
#include <cmath>
#include <limits>
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
    "seed,block,k,labels,head,domain,selectivity,persistence,reach,active,"
    "candidate\n";
constexpr char kSummaryHeader[] =
    "seed,sources,chance,candidates,best_selectivity,best_block,best_head,"
    "best_domain,shuffled_candidates,shuffled_best_selectivity,found,"
    "left_out\n";
constexpr int64_t kWindowsPerBatch = 16;

// The best candidate of one labelling over every block.
struct Best {
  int64_t candidates = 0;
  double selectivity = std::numeric_limits<double>::quiet_NaN();
  double persistence = 0, reach = 0;
  int block = -1;
  int64_t head = -1, domain = -1;
};

torch::Tensor Candidates(const HeadThemes& themes,
                         const ThemeAnchorOptions& options) {
  return (themes.active >= static_cast<double>(options.min_active)) &
         (themes.persistence >= options.min_persistence) &
         (themes.reach >= options.min_reach);
}

// The window of `source`'s half 1 where `head` has the most z, as text with
// its active positions marked, and the keys it reads most.
absl::StatusOr<std::string> Example(layers::GptImpl& model,
                                    const layers::LorsaImpl& lorsa, int block,
                                    int64_t head, const torch::Tensor& window,
                                    const datasets::Tokenizer& tokenizer,
                                    const ThemeAnchorOptions& options) {
  std::vector<torch::Tensor> captured;
  ASSIGN_OR_RETURN(layers::HookPoint * hook,
                   layers::RequireHook(
                       model, absl::StrCat("blocks.", block, ".attn.hook_in")));
  hook->Add(layers::CaptureHook(&captured));
  const absl::Cleanup clear_hooks = [&model] { model.ClearHooks(); };
  model.Hidden(window.unsqueeze(0));
  const layers::LorsaOutput out =
      lorsa.Run(captured.at(0), lorsa.options().top_k);
  const torch::Tensor z = out.activations[0].select(-1, head);  // (T)
  const torch::Tensor pattern = out.pattern[0][lorsa.GroupOf(head)];
  const torch::Tensor read =
      pattern * out.values[0].select(-1, head).unsqueeze(0);  // (T, T)
  const int64_t length = window.size(0);
  const int64_t shown = std::min<int64_t>(length, options.listing_tokens);
  std::string text;
  std::map<int64_t, std::pair<int, double>> keys;  // id: count, distance sum.
  for (int64_t t = 0; t < length; ++t) {
    const bool active = t > 0 && z[t].item<double>() != 0;
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
  const torch::Tensor active = (out.activations != 0).to(torch::kFloat);
  const torch::Tensor position =
      torch::arange(length, out.values.options());  // (T)
  // sum_s A(t, s) s v(s) per head, through each QK group's pattern.
  const torch::Tensor keyed = (out.values * position.view({1, length, 1}))
                                  .view({batch, length, groups, heads / groups})
                                  .permute({0, 2, 1, 3});
  const torch::Tensor read_position = torch::matmul(out.pattern, keyed)
                                          .permute({0, 2, 1, 3})
                                          .reshape({batch, length, heads});
  // At a selected position z = sum_s A(t, s) v(s), so t z - sum_s A s v is
  // sum_s A(t, s) v(s) (t - s).
  const torch::Tensor distance =
      (position.view({1, length, 1}) * out.activations - read_position) *
      active;
  const auto after_first = [](const torch::Tensor& x) {
    return x.slice(1, 1).sum(1).to(torch::kDouble);
  };
  return {after_first(out.activations), after_first(active),
          after_first(distance)};
}

HeadThemes ScoreThemes(const HeadWindowSums& sums,
                       const torch::Tensor& window_source,
                       const torch::Tensor& window_half, int64_t sources,
                       int64_t positions) {
  const int64_t heads = sums.z.size(1);
  const torch::Tensor cell = window_source * 2 + window_half;  // (W)
  const auto by_cell = [&](const torch::Tensor& x) {
    return torch::zeros({2 * sources, heads}, x.options())
        .index_add_(0, cell, x)
        .view({sources, 2, heads});
  };
  const torch::Tensor z = by_cell(sums.z), active = by_cell(sums.active),
                      distance = by_cell(sums.distance);
  const torch::Tensor tokens =
      (torch::bincount(cell, {}, 2 * sources).to(torch::kDouble) * positions)
          .view({sources, 2, 1});
  const torch::Tensor mean_z = z / tokens.clamp_min(1);
  HeadThemes themes;
  themes.domain = mean_z.select(1, 0).argmax(0);        // (H)
  const auto at_domain = [&](const torch::Tensor& x) {  // (S, H) -> (H)
    return x.gather(0, themes.domain.unsqueeze(0)).squeeze(0);
  };
  const torch::Tensor second = mean_z.select(1, 1);
  const torch::Tensor total = second.sum(0);
  themes.selectivity = torch::where(total > 0, at_domain(second) / total,
                                    torch::zeros_like(total));
  const torch::Tensor domain_tokens =
      tokens.select(1, 1).squeeze(1).index_select(0, themes.domain);
  themes.active = at_domain(active.select(1, 1));
  themes.persistence = themes.active / domain_tokens.clamp_min(1);
  const torch::Tensor domain_z = at_domain(z.select(1, 1));
  themes.reach =
      torch::where(domain_z > 0, at_domain(distance.select(1, 1)) / domain_z,
                   torch::zeros_like(domain_z));
  return themes;
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

absl::StatusOr<ThemeAnchorTables> FindThemeAnchors(
    const layers::LoadedModel& base, const datasets::Tokenizer& tokenizer,
    const std::vector<datasets::DomainTokens>& domains,
    std::vector<LorsaFit>& fits, const ThemeAnchorOptions& options) {
  layers::GptImpl& model = *base.model;
  model.eval();
  torch::NoGradGuard no_grad;
  ASSIGN_OR_RETURN(const PerLayerLorsas per_layer,
                   LorsasAtPerLayerK(fits, model.blocks.size()));
  const int64_t length = model.options().context_length;

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
  const int64_t count = static_cast<int64_t>(sources.size());
  ThemeAnchorTables tables{kHeadsHeader, kSummaryHeader, ""};
  const std::string left_out_names =
      left_out.empty() ? "-" : absl::StrJoin(left_out, ";");
  if (count < 2) {
    absl::StrAppendFormat(&tables.summary,
                          "%d,%d,nan,0,nan,-1,-1,-,0,nan,0,%s\n",
                          per_layer.seed, count, left_out_names);
    tables.examples = absl::StrCat(
        "seed ", per_layer.seed, ": fewer than two sources with a whole ",
        length, "-token window in each half (left out: ", left_out_names,
        ")\n");
    return tables;
  }
  const torch::Tensor all = torch::cat(windows);
  const torch::Tensor source = torch::tensor(window_source, torch::kLong);
  const torch::Tensor half = torch::tensor(window_half, torch::kLong);
  const torch::Tensor shuffled =
      PermuteWithinHalves(source, half, options.shuffle_seed);

  // Per block, the window sums of its Lorsa's heads.
  const size_t blocks = model.blocks.size();
  std::vector<std::vector<torch::Tensor>> inputs(blocks);
  std::vector<std::vector<HeadWindowSums>> parts(blocks);
  {
    const absl::Cleanup clear_hooks = [&model] { model.ClearHooks(); };
    for (size_t b = 0; b < blocks; ++b) {
      if (!per_layer.by_block[b]) continue;
      ASSIGN_OR_RETURN(layers::HookPoint * hook,
                       layers::RequireHook(
                           model, absl::StrCat("blocks.", b, ".attn.hook_in")));
      hook->Add(layers::CaptureHook(&inputs[b]));
    }
    for (int64_t w = 0; w < all.size(0); w += kWindowsPerBatch) {
      model.Hidden(
          all.slice(0, w, std::min(all.size(0), w + kWindowsPerBatch)));
      for (size_t b = 0; b < blocks; ++b) {
        const layers::Lorsa& lorsa = per_layer.by_block[b];
        if (!lorsa) continue;
        parts[b].push_back(WindowSums(
            *lorsa, lorsa->Run(inputs[b].at(0), lorsa->options().top_k)));
        inputs[b].clear();
      }
    }
  }

  Best best[2];  // By labelling: sources, shuffled.
  std::vector<HeadWindowSums> sums(blocks);
  for (size_t b = 0; b < blocks; ++b) {
    if (!per_layer.by_block[b]) continue;
    std::vector<torch::Tensor> z, active, distance;
    for (const HeadWindowSums& part : parts[b]) {
      z.push_back(part.z);
      active.push_back(part.active);
      distance.push_back(part.distance);
    }
    sums[b] = {torch::cat(z), torch::cat(active), torch::cat(distance)};
    for (int labelling = 0; labelling < 2; ++labelling) {
      const HeadThemes themes = ScoreThemes(
          sums[b], labelling == 0 ? source : shuffled, half, count, length - 1);
      const torch::Tensor candidate = Candidates(themes, options);
      for (int64_t h = 0; h < themes.domain.size(0); ++h) {
        const int64_t domain = themes.domain[h].item<int64_t>();
        const double selectivity = themes.selectivity[h].item<double>();
        const bool is_candidate = candidate[h].item<bool>();
        absl::StrAppendFormat(
            &tables.heads, "%d,%d,%d,%s,%d,%s,%.6f,%.6f,%.4f,%d,%d\n",
            per_layer.seed, b, per_layer.top_k,
            labelling == 0 ? "sources" : "shuffled", h, sources[domain],
            selectivity, themes.persistence[h].item<double>(),
            themes.reach[h].item<double>(),
            static_cast<int64_t>(themes.active[h].item<double>()),
            is_candidate ? 1 : 0);
        if (!is_candidate) continue;
        Best& top = best[labelling];
        ++top.candidates;
        if (top.block < 0 || selectivity > top.selectivity) {
          top.selectivity = selectivity;
          top.persistence = themes.persistence[h].item<double>();
          top.reach = themes.reach[h].item<double>();
          top.block = static_cast<int>(b);
          top.head = h;
          top.domain = domain;
        }
      }
    }
  }
  const bool found = best[0].candidates > 0 && best[1].candidates > 0;
  absl::StrAppendFormat(
      &tables.summary, "%d,%d,%.6f,%d,%.6f,%d,%d,%s,%d,%.6f,%d,%s\n",
      per_layer.seed, count, 1.0 / count, best[0].candidates,
      best[0].selectivity, best[0].block, best[0].head,
      best[0].domain < 0 ? "-" : sources[best[0].domain], best[1].candidates,
      best[1].selectivity, found ? 1 : 0, left_out_names);

  if (best[0].block < 0) {
    tables.examples = absl::StrCat("seed ", per_layer.seed,
                                   ": no head meets the candidate floors\n");
    return tables;
  }
  const Best& top = best[0];
  // Its domain's half-1 window where the head has the most z.
  const torch::Tensor mine =
      torch::nonzero((source == top.domain) & (half == 1)).squeeze(1);
  const int64_t window =
      mine[sums[top.block].z.index({mine}).select(1, top.head).argmax()]
          .item<int64_t>();
  ASSIGN_OR_RETURN(const std::string example,
                   Example(model, *per_layer.by_block[top.block], top.block,
                           top.head, all[window], tokenizer, options));
  tables.examples = absl::StrFormat(
      "seed %d: block %d head %d, source %s: selectivity %.3f (chance %.3f; "
      "best with sources shuffled %.3f), persistence %.3f, reach %.1f tokens, "
      "the best of %d candidates\n%s",
      per_layer.seed, top.block, top.head, sources[top.domain], top.selectivity,
      1.0 / count, best[1].selectivity, top.persistence, top.reach,
      top.candidates, example);
  return tables;
}

}  // namespace sparse_layers::analysis
