// evaluate_replacements: the MxD sparsity-accuracy frontier of fitted
// replacement layers (MxD arXiv:2505.21364 Sec. 3.1, Figs. 3 and 10, Sec.
// B.4.2 Table 3, Sec. C.1). For the base model: next-token CE and CE with the
// replaced block's FFN zero-ablated; for each replacement checkpoint (the base
// with the layer spliced in): CE, CE recovered, normalised MSE, l0 and dead
// fraction on held-out activation rows, and for MxDs the mean normalised rank
// of sampled experts W_n = D diag(c_n). One CSV row per replacement, with the
// fit's seed (its config's runtime.seed) so the claims engine can pair arms,
// and ablation_cost = zero-ablated CE - base CE: what the replaced FFN is
// worth, which a claim's control compares with a stated minimum.
//
//   evaluate_replacements --base=lm.pt --tokens=.../test.tokens.textproto
//       --activations=.../test.activations.textproto --out=frontier.csv
//       tc_k8.pt mxd_k8.pt ...
#include <torch/torch.h>

#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "datasets/activations/activation_shards.h"
#include "datasets/text/token_shards.h"
#include "layers/backend/torch_init.h"
#include "layers/models/model_loader.h"
#include "layers/replacement/nmse.h"
#include "layers/replacement/sparse_replacement.h"
#include "tools/common/cpu_slots.h"
#include "tools/common/file_io.h"
#include "tools/train/replacement_metrics.h"

ABSL_FLAG(std::string, base, "", "The base model (.pt)");
ABSL_FLAG(std::string, base_name, "base", "The base model's name in the CSV");
ABSL_FLAG(std::string, tokens, "", "Held-out token split (manifest)");
ABSL_FLAG(std::string, activations, "",
          "Held-out activation cache of the base model (manifest)");
ABSL_FLAG(int, batches, 16, "CE evaluation batches");
ABSL_FLAG(int, batch_size, 16, "Windows per CE batch");
ABSL_FLAG(int64_t, rows, 32768, "Activation rows for NMSE, l0 and dead units");
ABSL_FLAG(int, rank_experts, 64, "MxD experts sampled for the rank");
ABSL_FLAG(std::string, out, "", "CSV path");

namespace sparse_layers::analysis {
namespace {

// Mean of rank(D diag(c_n)) / min(H, O) over evenly spaced experts (Eq. 23).
double MeanExpertRank(const layers::MxdImpl& mxd, int samples) {
  torch::NoGradGuard no_grad;
  const int64_t n = mxd.experts.size(0);
  samples = std::min<int64_t>(samples, n);
  double total = 0;
  for (int i = 0; i < samples; ++i) {
    const int64_t expert = i * n / samples;
    total +=
        train::NormalisedRank(mxd.decoder * mxd.experts[expert].unsqueeze(0));
  }
  return total / samples;
}

absl::Status Run(const std::vector<std::string>& replacements) {
  if (absl::Status s = FirstError(
          {RequiredFile(FLAGS_base), RequiredFile(FLAGS_tokens),
           RequiredFile(FLAGS_activations), RequiredFlag(FLAGS_out),
           FlagAtLeast(FLAGS_batches, 1), FlagAtLeast(FLAGS_batch_size, 1),
           FlagAtLeast(FLAGS_rows, 1), FlagAtLeast(FLAGS_rank_experts, 1),
           FilesExist("replacement", replacements)});
      !s.ok()) {
    return s;
  }
  if (absl::Status s = AcquireCpuSlotIfRequested(absl::GetFlag(FLAGS_threads));
      !s.ok()) {
    return s;
  }
  auto base = layers::LoadModel(absl::GetFlag(FLAGS_base));
  if (!base.ok()) return base.status();
  auto tokens = datasets::TokenShardSet::Open(absl::GetFlag(FLAGS_tokens));
  if (!tokens.ok()) return tokens.status();
  auto activations =
      datasets::ActivationSet::Open(absl::GetFlag(FLAGS_activations));
  if (!activations.ok()) return activations.status();
  if (absl::Status s = (*activations)->CheckMadeFrom(absl::GetFlag(FLAGS_base));
      !s.ok()) {
    return s;
  }
  if (absl::GetFlag(FLAGS_rows) <= 0) {  // 0 rows would average to NaN.
    return absl::InvalidArgumentError("--rows must be > 0");
  }
  const int length = base->config.data().sequence_length() > 0
                         ? base->config.data().sequence_length()
                         : base->model->options().context_length;
  auto sampler = datasets::BatchSampler::Create(
      tokens->get(), absl::GetFlag(FLAGS_batch_size), length,
      base->config.runtime().seed());
  if (!sampler.ok()) return sampler.status();
  const int batches = absl::GetFlag(FLAGS_batches);
  const int layer = (*activations)->manifest().layer();

  const double ce_base =
      train::MeanCrossEntropy(*base->model, *sampler, batches);
  base->model->ReplaceFfn(
      layer, [](const torch::Tensor& x) { return torch::zeros_like(x); });
  const double ce_zero =
      train::MeanCrossEntropy(*base->model, *sampler, batches);
  std::fprintf(stderr,
               "evaluate_replacements: base CE %.4f, block %d FFN "
               "zero-ablated %.4f\n",
               ce_base, layer, ce_zero);

  std::string csv =
      "base,name,method,k,expansion,units,parameters,ce,ce_base,ce_zero,"
      "ablation_cost,ce_recovered,nmse,relative_mse,l0,dead_fraction,"
      "mean_expert_rank,seed\n";
  for (const std::string& path : replacements) {
    auto replacement = layers::LoadReplacement(path);
    if (!replacement.ok()) return replacement.status();
    const layers::LoadedModel* fitted = &replacement->loaded;
    const config::FfnReplacement& spec = replacement->spec;
    const std::shared_ptr<layers::SparseReplacementImpl>& sparse =
        replacement->layer;
    if (absl::Status s = layers::CheckFittedOn(*replacement, path, *base,
                                               absl::GetFlag(FLAGS_base));
        !s.ok()) {
      return s;
    }
    if (spec.layer() != layer) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, " replaces block ", spec.layer(),
                       ", the cache is of block ", layer));
    }
    const double ce =
        train::MeanCrossEntropy(*fitted->model, *sampler, batches);
    const train::ActivationFit codes =
        train::EvaluateOnActivations(*sparse, **activations, spec.on_output(),
                                     absl::GetFlag(FLAGS_rows), /*chunk=*/4096);
    const auto* mxd = dynamic_cast<const layers::MxdImpl*>(sparse.get());
    const std::string rank =
        mxd ? absl::StrFormat(
                  "%.4f",
                  MeanExpertRank(*mxd, absl::GetFlag(FLAGS_rank_experts)))
            : "";
    int64_t parameters = 0;
    for (const torch::Tensor& p : sparse->parameters()) parameters += p.numel();
    absl::StrAppendFormat(&csv,
                          "%s,%s,%s,%d,%d,%d,%d,%.6f,%.6f,%.6f,%.6f,"
                          "%.6f,%.6g,%.6g,%.3f,%.6f,%s,%d\n",
                          absl::GetFlag(FLAGS_base_name), fitted->config.name(),
                          spec.ffn(), sparse->options().top_k, spec.expansion(),
                          sparse->units(), parameters, ce, ce_base, ce_zero,
                          ce_zero - ce_base,
                          train::CeRecovered(ce_base, ce_zero, ce), codes.nmse,
                          codes.relative_mse, codes.l0, codes.dead_fraction,
                          rank, fitted->config.runtime().seed());
    std::fprintf(stderr,
                 "evaluate_replacements: %s: CE %.4f, NMSE %.4f, l0 %.1f\n",
                 fitted->config.name().c_str(), ce, codes.nmse, codes.l0);
  }
  return WriteFileAtomically(absl::GetFlag(FLAGS_out), csv);
}

}  // namespace
}  // namespace sparse_layers::analysis

int main(int argc, char** argv) {
  const std::vector<std::string> replacements = sparse_layers::InitMain(
      argc, argv, "Evaluates fitted replacement layers (CE, NMSE, l0, rank).");
  return sparse_layers::RunMain(
      [&] { return sparse_layers::analysis::Run(replacements); });
}
