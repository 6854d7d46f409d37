// activation_flow: the MoHD observation study (arXiv:2412.05644 Sec. 3) on
// trained models. Runs held-out windows through each model, captures every
// block's residual, attention and FFN sites, and writes
//   flow.csv:    per model, block and site: mean sum m (M3, also relative to
//                the block's attention input), median m, the share of the top
//                10 / 25 / 50% dims (M1), relative sparsity (M2);
//   sharing.csv: per model, block, q and window w at the attention input:
//                dims shared by w consecutive tokens, by w tokens of
//                different sequences (shuffled null) and by independent
//                sets (M4), and the in-all / unique counts of M5 at w = 5.
// Position 0 (the document start and attention sink) is left out.
//
//   activation_flow --models=dense=a.pt,mohd_x2=b.pt
//       --tokens=.../validation.tokens.textproto --out_dir=DIR
#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "analysis/activation_flow/hidden_dims.h"
#include "datasets/text/token_shards.h"
#include "layers/backend/torch_init.h"
#include "layers/hooks/hook_point.h"
#include "layers/models/model_loader.h"
#include "tools/common/cpu_slots.h"
#include "tools/common/staged_outputs.h"

ABSL_FLAG(std::vector<std::string>, models, {}, "name=checkpoint.pt, ...");
ABSL_FLAG(std::string, tokens, "", "Held-out token split manifest");
ABSL_FLAG(int, windows, 256, "Held-out windows (spec 4.3: >= 256)");
ABSL_FLAG(int, sequence_length, 128, "Window length (capped at the context)");
ABSL_FLAG(int, shuffled_windows, 2000, "Random windows per shuffled null");
ABSL_FLAG(std::string, out_dir, "", "Where flow.csv and sharing.csv go");

namespace sparse_layers::analysis {
namespace {

// (site, hook name suffix) in the order activations flow through a block.
const std::vector<std::pair<std::string, std::string>>& Sites() {
  static const auto* sites =
      new std::vector<std::pair<std::string, std::string>>{
          {"resid_pre", "hook_resid_pre"}, {"attn_in", "attn.hook_in"},
          {"attn_out", "attn.hook_out"},   {"resid_mid", "hook_resid_mid"},
          {"ffn_in", "ffn.hook_in"},       {"ffn_hidden", "ffn.hook_hidden"},
          {"ffn_out", "ffn.hook_out"},     {"resid_post", "hook_resid_post"}};
  return *sites;
}

// Captured activations per (block, site): (windows, T - 1, width).
using Captures = std::vector<std::vector<torch::Tensor>>;

absl::StatusOr<Captures> Capture(layers::GptImpl& model,
                                 const torch::Tensor& tokens) {
  const int blocks = static_cast<int>(model.blocks.size());
  std::vector<std::vector<std::vector<torch::Tensor>>> sinks(
      blocks, std::vector<std::vector<torch::Tensor>>(Sites().size()));
  for (int b = 0; b < blocks; ++b) {
    for (size_t s = 0; s < Sites().size(); ++s) {
      layers::HookPoint* hook =
          model.FindHook(absl::StrCat("blocks.", b, ".", Sites()[s].second));
      if (hook == nullptr) {
        return absl::NotFoundError(
            absl::StrCat("no hook blocks.", b, ".", Sites()[s].second));
      }
      hook->Add(layers::CaptureHook(&sinks[b][s]));
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

void AppendFlow(const std::string& model_name, const Captures& captures,
                std::string* csv) {
  for (size_t b = 0; b < captures.size(); ++b) {
    const double attn_in = MeanEnergy(Magnitudes(captures[b][1]).flatten(0, 1));
    for (size_t s = 0; s < Sites().size(); ++s) {
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
          csv, model_name, ",", b, ",", Sites()[s].first, ",", width, ",",
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
                   std::string* csv) {
  const int64_t shuffled = absl::GetFlag(FLAGS_shuffled_windows);
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

absl::Status Run() {
  if (absl::Status s = FirstError(
          {RequiredFlag(FLAGS_models), RequiredFile(FLAGS_tokens),
           RequiredFlag(FLAGS_out_dir), FlagAtLeast(FLAGS_windows, 1),
           FlagAtLeast(FLAGS_sequence_length, 2),
           FlagAtLeast(FLAGS_shuffled_windows, 1)});
      !s.ok()) {
    return s;
  }
  if (absl::Status s = AcquireCpuSlotIfRequested(absl::GetFlag(FLAGS_threads));
      !s.ok()) {
    return s;
  }
  auto shards = datasets::TokenShardSet::Open(absl::GetFlag(FLAGS_tokens));
  if (!shards.ok()) return shards.status();
  std::string flow =
      "model,block,site,width,energy,energy_per_dim,energy_vs_attn_in,"
      "median_m,share_top10,share_top25,share_top50,share_top50_token_mean,"
      "share_top50_without_top3,sparsity_rel_0.01,sparsity_rel_0.1\n";
  std::string sharing =
      "model,block,site,width,q,window,consecutive,shuffled,independent,"
      "unique_per_token,unique_per_token_shuffled\n";
  for (const std::string& entry : absl::GetFlag(FLAGS_models)) {
    const std::vector<std::string> parts = absl::StrSplit(entry, '=');
    if (parts.size() != 2) {
      return absl::InvalidArgumentError(
          absl::StrCat("--models entry '", entry, "': expected name=path"));
    }
    auto loaded = layers::LoadModel(parts[1]);
    if (!loaded.ok()) return loaded.status();
    const int length = std::min<int>(absl::GetFlag(FLAGS_sequence_length),
                                     loaded->model->options().context_length);
    auto probe = datasets::BatchSampler::Create(shards->get(), 1, length, 1);
    if (!probe.ok()) return probe.status();
    const int windows = static_cast<int>(std::min<int64_t>(
        absl::GetFlag(FLAGS_windows), probe->EvalWindowCount()));
    if (windows < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("--tokens holds no window of ", length, " tokens"));
    }
    auto sampler =
        datasets::BatchSampler::Create(shards->get(), windows, length, 1);
    if (!sampler.ok()) return sampler.status();
    const datasets::TokenBatch batch = sampler->EvalBatch(0, 1);
    const torch::Tensor tokens =
        torch::tensor(batch.inputs).view({windows, length});
    auto captures = Capture(*loaded->model, tokens);
    if (!captures.ok()) return captures.status();
    AppendFlow(parts[0], *captures, &flow);
    AppendSharing(parts[0], *captures, &sharing);
    std::fprintf(stderr, "activation_flow: %s: %d windows of %d tokens\n",
                 parts[0].c_str(), windows, length);
  }
  const std::string dir = absl::GetFlag(FLAGS_out_dir);
  StagedOutputs outputs;  // Both tables or neither.
  if (absl::Status s = outputs.WriteFile(dir + "/flow.csv", flow); !s.ok()) {
    return s;
  }
  if (absl::Status s = outputs.WriteFile(dir + "/sharing.csv", sharing);
      !s.ok()) {
    return s;
  }
  return outputs.Commit();
}

}  // namespace
}  // namespace sparse_layers::analysis

int main(int argc, char** argv) {
  sparse_layers::InitMain(argc, argv,
                          "activation_flow --models=name=ckpt.pt,... "
                          "--tokens=T --out_dir=DIR");
  return sparse_layers::RunMain(sparse_layers::analysis::Run);
}
