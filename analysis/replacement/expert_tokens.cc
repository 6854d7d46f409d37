#include "analysis/replacement/expert_tokens.h"

#include <torch/torch.h>

#include <algorithm>
#include <cstdio>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/types/span.h"
#include "base/common/status_macros.h"
#include "config/config_loader.h"
#include "datasets/text/held_out_windows.h"
#include "datasets/text/running_text.h"
#include "models/hook_lookup.h"
#include "ops/hooks/hook_point.h"

namespace sparse_layers::analysis {

torch::Tensor UnitCoefficients(const torch::Tensor& values,
                               const torch::Tensor& indices, int64_t unit) {
  return (values * indices.eq(unit).to(values.dtype())).sum(1);
}

TokenSpecificity MostCommonToken(const torch::Tensor& coefficients,
                                 const torch::Tensor& tokens) {
  const torch::Tensor fired = tokens.masked_select(coefficients > 0);
  if (fired.numel() == 0) return {};
  const torch::Tensor counts = torch::bincount(fired);
  return {counts.max().item<double>() / fired.numel(),
          counts.argmax().item<int64_t>()};
}

absl::StatusOr<ExpertTokensTables> ListExpertTokens(
    layers::LoadedModel& base, const std::string& base_path,
    const datasets::TokenShardSet& tokens, const datasets::Tokenizer& tokenizer,
    const std::vector<std::string>& replacement_paths,
    const ExpertTokensOptions& options) {
  if (replacement_paths.empty()) {
    return absl::InvalidArgumentError("no fits given");
  }
  ASSIGN_OR_RETURN(const std::vector<layers::LoadedReplacement> fits,
                   layers::LoadReplacements(replacement_paths));
  const int length = config::TrainingWindowLength(base.config);
  ASSIGN_OR_RETURN(const datasets::HeldOutWindows held_out,
                   datasets::ReadHeldOutWindows(
                       tokens, options.batches * options.batch_size, length));
  const torch::Tensor windows = torch::tensor(held_out.ids, torch::kLong)
                                    .view({held_out.count, held_out.length});
  const std::vector<torch::Tensor> window_batches =
      windows.split(options.batch_size, 0);
  const torch::Tensor flat_tokens = windows.flatten();

  ExpertTokensTables tables;
  tables.units = "base,name,method,k,seed,unit,firing_rate,top_token_share\n";
  torch::NoGradGuard no_grad;
  base.model->eval();
  for (const layers::LoadedReplacement& fit : fits) {
    RETURN_IF_ERROR(layers::CheckFittedOn(fit, base, base_path));
    if (!fit.layer) {
      return absl::InvalidArgumentError(
          absl::StrCat(fit.path, " is not a sparse layer of an FFN site"));
    }
    // The layer reads the base model's FFN input (its output, for an SAE).
    ASSIGN_OR_RETURN(
        layers::HookPoint* const site,
        layers::RequireHook(
            *base.model,
            absl::StrCat("blocks.", fit.spec.layer(), ".ffn.",
                         fit.spec.on_output() ? "hook_out" : "hook_in")));
    std::vector<torch::Tensor> activations;
    site->Add([&](const torch::Tensor& a) {
      activations.push_back(a.reshape({-1, a.size(-1)}));
      return a;
    });
    for (const torch::Tensor& batch : window_batches) base.model->Hidden(batch);
    site->Clear();
    const int k = fit.layer->options().top_k;
    const layers::TopKCodes codes =
        fit.layer->Encode(torch::cat(activations, 0), k);
    const std::string& name = fit.loaded.config.name();
    const int64_t units = std::min<int64_t>(options.units, fit.layer->units());
    for (int64_t unit = 0; unit < units; ++unit) {
      const torch::Tensor c =
          UnitCoefficients(codes.values, codes.indices, unit);
      const double rate = (c > 0).to(torch::kDouble).mean().item<double>();
      const TokenSpecificity top = MostCommonToken(c, flat_tokens);
      absl::StrAppendFormat(&tables.units, "%s,%s,%s,%d,%d,%d,%.6f,%.4f\n",
                            options.base_name, name, fit.spec.ffn(), k,
                            fit.loaded.config.runtime().seed(), unit, rate,
                            top.share);
      absl::StrAppendFormat(
          &tables.listing,
          "%s unit %d: fires on %.2f%% of tokens; most common token \"%s\" "
          "(%.0f%% of its firings)\n",
          name, unit, 100 * rate,
          // As the contexts below show it: printable, word space kept.
          top.token >= 0 ? datasets::PieceInRunningText(
                               tokenizer, static_cast<int>(top.token))
                         : "",
          100 * top.share);
      const torch::Tensor order = c.argsort(0, /*descending=*/true);
      for (int i = 0; i < options.contexts; ++i) {
        const int64_t row = order[i].item<int64_t>();
        if (c[row].item<double>() <= 0) break;
        const int64_t window = row / windows.size(1);
        const int64_t position = row % windows.size(1);
        // The unit's token, `context_tokens` before it and the next one.
        absl::StrAppendFormat(
            &tables.listing, "  %.3f  %s\n", c[row].item<double>(),
            datasets::MarkedContext(
                tokenizer,
                absl::MakeConstSpan(held_out.ids)
                    .subspan(window * held_out.length, held_out.length),
                position, options.context_tokens, /*after=*/1));
      }
    }
    tables.listing += "\n";
    std::fprintf(stderr, "expert_tokens: %s: first %lld units listed\n",
                 name.c_str(), static_cast<long long>(units));
  }
  return tables;
}

}  // namespace sparse_layers::analysis
