#include "analysis/activation_flow/activation_flow.h"

#include <algorithm>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analysis/activation_flow/hidden_dims.h"
#include "base/common/status_macros.h"
#include "datasets/text/held_out_windows.h"
#include "models/hook_lookup.h"
#include "ops/hooks/hook_point.h"

namespace sparse_layers::analysis {
namespace {

using Captures = std::vector<std::vector<torch::Tensor>>;

void AppendFlow(const std::string& model_name, const Captures& captures,
                std::string* csv) {
  const auto& sites = ActivationSites();
  for (size_t b = 0; b < captures.size(); ++b) {
    const double attn_in = MeanEnergy(Magnitudes(captures[b][1]).flatten(0, 1));
    for (size_t s = 0; s < sites.size(); ++s) {
      if (!captures[b][s].defined()) continue;
      const torch::Tensor m = Magnitudes(captures[b][s]).flatten(0, 1);
      const int64_t width = m.size(1);
      const std::vector<double> share = TopShare(m, {0.1, 0.25, 0.5});
      const torch::Tensor mean_m = m.mean(0, /*keepdim=*/true);
      // Without the 3 dims of largest mean m (massive-activation outliers).
      const torch::Tensor rest = std::get<1>(mean_m[0].sort(-1, true))
                                     .slice(0, std::min<int64_t>(3, width - 1));
      const double energy = MeanEnergy(m);
      absl::StrAppend(
          csv, model_name, ",", b, ",", sites[s].first, ",", width, ",",
          absl::StrFormat("%.6g,%.6g,%.6g,%.6g,%.5f,%.5f,%.5f,%.5f,%.5f,%.5f,"
                          "%.5f\n",
                          energy, energy / width, energy / attn_in,
                          MedianMagnitude(m), share[0], share[1], share[2],
                          TopShare(mean_m, {0.5})[0],
                          TopShare(m.index_select(1, rest), {0.5})[0],
                          RelativeSparsity(m, 0.01), RelativeSparsity(m, 0.1)));
    }
  }
}

void AppendSharing(const std::string& model_name, const Captures& captures,
                   int64_t shuffled, std::string* csv) {
  for (size_t b = 0; b < captures.size(); ++b) {
    const torch::Tensor m = Magnitudes(captures[b][1]);  // attn_in
    const int64_t d = m.size(2);
    for (double q : {0.2, 0.5, 0.8, 0.9}) {
      const torch::Tensor high = HighDims(m, q);
      for (int64_t w = 2; w <= 20 && w <= high.size(0); ++w) {
        const SharedUnique consecutive = ConsecutiveSharedUnique(high, w);
        const SharedUnique random =
            ShuffledSharedUnique(high, w, shuffled, 1000 * b + w);
        absl::StrAppend(
            csv, model_name, ",", b, ",attn_in,", d, ",", q, ",", w, ",",
            absl::StrFormat("%.3f,%.3f,%.3f,%.3f,%.3f\n", consecutive.in_all,
                            random.in_all, IndependentSharing(d, q, w),
                            consecutive.unique_per_token,
                            random.unique_per_token));
      }
    }
  }
}

}  // namespace

const std::vector<std::pair<std::string, std::string>>& ActivationSites() {
  static const auto* sites =
      new std::vector<std::pair<std::string, std::string>>{
          {"resid_pre", "hook_resid_pre"}, {"attn_in", "attn.hook_in"},
          {"attn_out", "attn.hook_out"},   {"resid_mid", "hook_resid_mid"},
          {"ffn_in", "ffn.hook_in"},       {"ffn_hidden", "ffn.hook_hidden"},
          {"ffn_out", "ffn.hook_out"},     {"resid_post", "hook_resid_post"}};
  return *sites;
}

absl::StatusOr<Captures> CaptureActivationSites(layers::GptImpl& model,
                                                const torch::Tensor& tokens) {
  const auto& sites = ActivationSites();
  const int blocks = static_cast<int>(model.blocks.size());
  std::vector<std::vector<std::vector<torch::Tensor>>> sinks(
      blocks, std::vector<std::vector<torch::Tensor>>(sites.size()));
  for (int b = 0; b < blocks; ++b) {
    for (size_t s = 0; s < sites.size(); ++s) {
      absl::StatusOr<layers::HookPoint*> hook = layers::RequireHook(
          model, absl::StrCat("blocks.", b, ".", sites[s].second));
      if (!hook.ok()) {
        model.ClearHooks();
        return hook.status();
      }
      (*hook)->Add(layers::CaptureHook(&sinks[b][s]));
    }
  }
  torch::NoGradGuard no_grad;
  const int64_t length = tokens.size(1);
  for (int64_t start = 0; start < tokens.size(0); start += 32) {
    model.forward(tokens.slice(0, start, start + 32));
  }
  model.ClearHooks();
  Captures captures(blocks);
  for (int b = 0; b < blocks; ++b) {
    for (auto& sink : sinks[b]) {
      // Sites a layer does not run (none here today) stay undefined; MoHD
      // layers hook (B * T, width) rows, so every capture is reshaped.
      captures[b].push_back(sink.empty()
                                ? torch::Tensor()
                                : torch::cat(sink)
                                      .reshape({tokens.size(0), length, -1})
                                      .slice(1, 1));
    }
  }
  return captures;
}

ActivationFlowTables::ActivationFlowTables()
    : flow_(
          "model,block,site,width,energy,energy_per_dim,energy_vs_attn_in,"
          "median_m,share_top10,share_top25,share_top50,share_top50_token_"
          "mean,share_top50_without_top3,sparsity_rel_0.01,sparsity_rel_0.1\n"),
      sharing_(
          "model,block,site,width,q,window,consecutive,shuffled,independent,"
          "unique_per_token,unique_per_token_shuffled\n") {}

absl::Status ActivationFlowTables::AddModel(
    const std::string& name, layers::GptImpl& model,
    const datasets::TokenShardSet& tokens,
    const ActivationFlowOptions& options) {
  const int length =
      std::min<int>(options.sequence_length, model.options().context_length);
  ASSIGN_OR_RETURN(
      const datasets::HeldOutWindows held_out,
      datasets::ReadHeldOutWindows(tokens, options.windows, length));
  const int windows = held_out.count;
  const torch::Tensor window_tokens =
      torch::tensor(held_out.ids).view({windows, length});
  ASSIGN_OR_RETURN(const Captures captures,
                   CaptureActivationSites(model, window_tokens));
  AppendFlow(name, captures, &flow_);
  AppendSharing(name, captures, options.shuffled_windows, &sharing_);
  std::fprintf(stderr, "activation_flow: %s: %d windows of %d tokens\n",
               name.c_str(), windows, length);
  return absl::OkStatus();
}

}  // namespace sparse_layers::analysis
