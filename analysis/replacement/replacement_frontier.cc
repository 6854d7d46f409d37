#include "analysis/replacement/replacement_frontier.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analysis/replacement/ffn_ablation.h"
#include "base/common/status_macros.h"
#include "config/config_loader.h"
#include "config/config_validator.h"
#include "pipelines/train/replacement_metrics.h"

namespace sparse_layers::analysis {

namespace {

// Expert n's (H, O) matrix: MxD's D diag(c_n) (arXiv:2505.21364 Lemma 1), the
// CP-MoE's U2 diag(U1[n]) U3 (App. B.4.1); undefined for other layers.
torch::Tensor ExpertMatrix(const layers::SparseReplacementImpl& layer,
                           int64_t expert) {
  if (const auto* mxd = dynamic_cast<const layers::MxdImpl*>(&layer)) {
    return mxd->decoder * mxd->experts[expert].unsqueeze(0);
  }
  if (const auto* cp = dynamic_cast<const layers::CpMoeImpl*>(&layer)) {
    return torch::matmul(cp->u2 * cp->u1[expert].unsqueeze(0), cp->u3);
  }
  return {};
}

// The fit's sparsity rule as the tables name it: "topk", "relu_l1", ...
std::string SparsityName(const config::FfnReplacement& spec) {
  return absl::AsciiStrToLower(
      config::FfnReplacement::Sparsity_Name(config::EffectiveSparsity(spec)));
}

}  // namespace

std::optional<double> MeanExpertRank(const layers::SparseReplacementImpl& layer,
                                     int samples) {
  torch::NoGradGuard no_grad;
  if (!ExpertMatrix(layer, 0).defined()) return std::nullopt;
  const int64_t n = layer.units();
  samples = std::min<int64_t>(samples, n);
  double total = 0;
  for (int i = 0; i < samples; ++i) {
    total += train::NormalisedRank(ExpertMatrix(layer, i * n / samples));
  }
  return total / samples;
}

UnitUsage UsageOfUnits(layers::SparseReplacementImpl& layer,
                       const datasets::ActivationSet& data, bool on_output,
                       int64_t rows) {
  torch::NoGradGuard no_grad;
  train::FiringCounter firing(layer.units());
  torch::Tensor top = torch::zeros({layer.units()}, torch::kLong);
  rows = std::min(rows, data.rows());
  for (int64_t begin = 0; begin < rows; begin += 4096) {
    auto [x, y] = data.Range(begin, std::min(rows, begin + 4096));
    const layers::TopKCodes codes =
        layer.Encode(on_output ? y : x, layer.options().top_k);
    firing.Add(codes);
    // Each row's unit with the largest code; a row where no code fires has
    // none (its zero codes' indices are ties, not choices).
    const auto [largest, slot] = codes.values.max(1, /*keepdim=*/true);
    const torch::Tensor first =
        codes.indices.gather(1, slot).squeeze(1).masked_select(
            largest.squeeze(1) > 0);
    top.index_add_(0, first, torch::ones_like(first));
  }
  return {firing.Frequencies(),
          rows > 0 ? top.max().item<double>() / rows : 0.0};
}

double DenseFraction(const torch::Tensor& frequencies, double threshold) {
  if (frequencies.numel() == 0) return 0.0;
  return (frequencies > threshold).to(torch::kDouble).mean().item<double>();
}

std::vector<std::pair<double, double>> FrequencyHistogram(
    const torch::Tensor& frequencies) {
  constexpr int kBins = 20;
  std::vector<int64_t> counts(kBins);
  const torch::Tensor f = frequencies.to(torch::kDouble).contiguous();
  const double* data = f.data_ptr<double>();
  for (int64_t i = 0; i < f.numel(); ++i) {
    const double log_frequency = std::log10(data[i] + 1e-10);
    const int bin = static_cast<int>(std::floor((log_frequency + 10) / 0.5));
    ++counts[std::clamp(bin, 0, kBins - 1)];
  }
  std::vector<std::pair<double, double>> histogram;
  for (int bin = 0; bin < kBins; ++bin) {
    histogram.emplace_back(-10 + 0.5 * bin + 0.25,
                           static_cast<double>(counts[bin]) / f.numel());
  }
  return histogram;
}

absl::StatusOr<ReplacementFrontierTables> EvaluateReplacements(
    layers::LoadedModel& base, const std::string& base_path,
    const datasets::TokenShardSet& tokens,
    const datasets::ActivationSet& activations,
    const std::vector<std::string>& replacement_paths,
    const ReplacementFrontierOptions& options) {
  RETURN_IF_ERROR(activations.CheckMadeFrom(base_path));
  if (options.rows <= 0) {  // 0 rows would average to NaN.
    return absl::InvalidArgumentError("--rows must be > 0");
  }
  const int length = config::TrainingWindowLength(base.config);
  ASSIGN_OR_RETURN(
      const datasets::BatchSampler sampler,
      datasets::BatchSampler::Create(&tokens, options.batch_size, length,
                                     base.config.runtime().seed()));
  const int batches = options.batches;
  const int layer = activations.manifest().layer();

  const double ce_base = train::MeanCrossEntropy(*base.model, sampler, batches);
  ASSIGN_OR_RETURN(
      const double ce_zero,
      ZeroAblated(
          *base.model, absl::StrCat("blocks.", layer, ".ffn.hook_out"), [&] {
            return train::MeanCrossEntropy(*base.model, sampler, batches);
          }));
  std::fprintf(stderr,
               "evaluate_replacements: base CE %.4f, block %d FFN "
               "zero-ablated %.4f\n",
               ce_base, layer, ce_zero);

  std::string units_csv =
      "base,name,method,k,seed,log10_frequency,share_of_units\n";
  std::string csv =
      "base,name,method,k,expansion,units,parameters,ce,ce_base,ce_zero,"
      "ablation_cost,ce_recovered,nmse,relative_mse,l0,dead_fraction,"
      "mean_expert_rank,seed,training,shared_expert_rate,rank_fraction,"
      "sparsity,sparsity_penalty,dense_fraction\n";
  for (const std::string& path : replacement_paths) {
    ASSIGN_OR_RETURN(const layers::LoadedReplacement replacement,
                     layers::LoadReplacement(path));
    const layers::LoadedModel& fitted = replacement.loaded;
    const config::FfnReplacement& spec = replacement.spec;
    layers::SparseReplacementImpl& sparse = *replacement.layer;
    RETURN_IF_ERROR(layers::CheckFittedOn(replacement, base, base_path));
    if (spec.layer() != layer) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, " replaces block ", spec.layer(),
                       ", the cache is of block ", layer));
    }
    const double ce = train::MeanCrossEntropy(*fitted.model, sampler, batches);
    const train::ActivationFit codes = train::EvaluateOnActivations(
        sparse, activations, spec.on_output(), options.rows, /*chunk=*/4096);
    const std::optional<double> mean_rank =
        MeanExpertRank(sparse, options.rank_experts);
    const std::string rank =
        mean_rank ? absl::StrFormat("%.4f", *mean_rank) : "";
    // The penalty lambda of the ReLU + L1 and JumpReLU rules (the level of MxD
    // Fig. 18); "" for the others.
    const std::string penalty =
        spec.sparsity_penalty() > 0
            ? absl::StrFormat("%g", spec.sparsity_penalty())
            : "";
    // The CP-MoE's design rank, the level of MxD Fig. 12; "" for the others.
    const std::string rank_fraction =
        spec.cp_rank_fraction() > 0
            ? absl::StrFormat("%g", spec.cp_rank_fraction())
            : "";
    int64_t parameters = 0;
    for (const torch::Tensor& p : sparse.parameters()) parameters += p.numel();
    const UnitUsage usage =
        UsageOfUnits(sparse, activations, spec.on_output(), options.rows);
    absl::StrAppendFormat(
        &csv,
        "%s,%s,%s,%d,%d,%d,%d,%.6f,%.6f,%.6f,%.6f,"
        "%.6f,%.6g,%.6g,%.3f,%.6f,%s,%d,%s,%.6f,%s,%s,%s,%.6f\n",
        options.base_name, fitted.config.name(), spec.ffn(),
        sparse.options().top_k, spec.expansion(), sparse.units(), parameters,
        ce, ce_base, ce_zero, ce_zero - ce_base,
        train::CeRecovered(ce_base, ce_zero, ce), codes.nmse,
        codes.relative_mse, codes.l0, codes.dead_fraction, rank,
        fitted.config.runtime().seed(),
        fitted.config.model().layer_options().random_k() ? "random_k"
                                                         : "default",
        usage.shared_expert_rate, rank_fraction, SparsityName(spec), penalty,
        DenseFraction(usage.frequencies, 0.1));
    for (const auto& [bin, share] : FrequencyHistogram(usage.frequencies)) {
      absl::StrAppendFormat(&units_csv, "%s,%s,%s,%d,%d,%.2f,%.6f\n",
                            options.base_name, fitted.config.name(), spec.ffn(),
                            sparse.options().top_k,
                            fitted.config.runtime().seed(), bin, share);
    }
    std::fprintf(stderr,
                 "evaluate_replacements: %s: CE %.4f, NMSE %.4f, l0 %.1f\n",
                 fitted.config.name().c_str(), ce, codes.nmse, codes.l0);
  }
  return ReplacementFrontierTables{csv, units_csv};
}

}  // namespace sparse_layers::analysis
