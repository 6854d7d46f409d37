// steer: feature steering with fitted replacement layers (MxD
// arXiv:2505.21364 Sec. 3.2.2, Fig. 5, Sec. D.1). For each of the first
// --units units of each fit, alpha is added to that unit's code at every
// position (Transcoder / Skip Transcoder: alpha d_n; MxD: alpha (c_n o D^T z);
// SAE on the FFN output: alpha times its decoder row), and --samples
// continuations of --prompt are sampled (top-p, temperature, frequency penalty
// as in the paper's code). alpha = --alpha_scale x the unit's largest
// activation on held-out text, so units of different layers are pushed
// comparably (the paper's fixed alpha is for LLM-scale codes). Scores, without
// LLM judges:
//   concept: share of generated tokens among the unit's 10 top-activating
//            tokens, steered minus unsteered (same sampling seeds);
//   fluency: mean NLL of the generated tokens under the base model.
// Samples are drawn from --seed, written to the CSV's `seed` column: one
// seed's run steers that seed's fits, so the claims engine pairs them.
//
//   steer --base=lm.pt --tokenizer=bpe.model --tokens=test.tokens.textproto
//       --seed=1 --out=steering.csv --examples=examples.txt tc.pt mxd.pt
#include <torch/torch.h>

#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "analysis/steering/steering_metrics.h"
#include "datasets/text/token_shards.h"
#include "datasets/text/tokenizer.h"
#include "layers/models/sampling.h"
#include "layers/replacement/sparse_replacement.h"
#include "tools/common/cpu_slots.h"
#include "tools/common/init.h"
#include "tools/common/staged_outputs.h"
#include "tools/train/model_loader.h"

ABSL_FLAG(std::string, base, "", "The base model (.pt)");
ABSL_FLAG(std::string, base_name, "base", "The base model's name in the CSV");
ABSL_FLAG(std::string, tokenizer, "", "The base model's tokenizer");
ABSL_FLAG(std::string, tokens, "", "Held-out token split (reference text)");
ABSL_FLAG(int, reference_batches, 8, "Reference windows / 8 for top tokens");
ABSL_FLAG(std::string, prompt, "Let's talk about ", "Steering prompt");
ABSL_FLAG(int, units, 16, "Steer units 0..units-1 of each layer");
ABSL_FLAG(int, samples, 4, "Samples per unit");
ABSL_FLAG(int, new_tokens, 32, "Tokens per sample");
ABSL_FLAG(double, alpha_scale, 4.0,
          "alpha = scale x the unit's max activation");
ABSL_FLAG(double, temperature, 1.0, "Sampling temperature");
ABSL_FLAG(double, top_p, 0.1, "Nucleus mass (paper: 0.1)");
ABSL_FLAG(double, frequency_penalty, 1.0, "Frequency penalty (paper: 1.0)");
ABSL_FLAG(uint64_t, seed, 42,
          "Seed of each unit's samples (the CSV's seed column)");
ABSL_FLAG(std::string, out, "", "CSV path");
ABSL_FLAG(std::string, examples, "", "Text file with example generations");

namespace sparse_layers::analysis {
namespace {

std::vector<std::vector<int64_t>> Generate(layers::GptImpl& model,
                                           const std::vector<int64_t>& prompt) {
  std::vector<std::vector<int64_t>> out;
  for (int s = 0; s < absl::GetFlag(FLAGS_samples); ++s) {
    layers::SamplingOptions options;
    options.new_tokens = absl::GetFlag(FLAGS_new_tokens);
    options.temperature = absl::GetFlag(FLAGS_temperature);
    options.top_p = absl::GetFlag(FLAGS_top_p);
    options.frequency_penalty = absl::GetFlag(FLAGS_frequency_penalty);
    options.seed = absl::GetFlag(FLAGS_seed) + s;
    out.push_back(layers::Sample(model, prompt, options));
  }
  return out;
}

double MeanNll(layers::GptImpl& base, const std::vector<int64_t>& prompt,
               const std::vector<std::vector<int64_t>>& generations) {
  double total = 0;
  for (const auto& g : generations) total += ContinuationNll(base, prompt, g);
  return generations.empty() ? 0 : total / generations.size();
}

absl::Status Run(const std::vector<std::string>& fits) {
  if (absl::Status s = FirstError(
          {RequiredFile(FLAGS_base), RequiredFile(FLAGS_tokenizer),
           RequiredFile(FLAGS_tokens), RequiredFlag(FLAGS_out),
           FlagAtLeast(FLAGS_reference_batches, 1), FlagAtLeast(FLAGS_units, 1),
           FlagAtLeast(FLAGS_samples, 1), FlagAtLeast(FLAGS_new_tokens, 1),
           FlagInRange(FLAGS_alpha_scale, -1e6, 1e6),
           FlagInRange(FLAGS_temperature, 1e-6, 1e6),
           FlagInRange(FLAGS_top_p, 1e-6, 1.0),
           FlagInRange(FLAGS_frequency_penalty, -1e6, 1e6),
           FilesExist("fit", fits)});
      !s.ok()) {
    return s;
  }
  if (absl::Status s = AcquireCpuSlotIfRequested(absl::GetFlag(FLAGS_threads));
      !s.ok()) {
    return s;
  }
  auto base = train::LoadModel(absl::GetFlag(FLAGS_base));
  if (!base.ok()) return base.status();
  std::string error;
  auto tokenizer =
      datasets::Tokenizer::Load(absl::GetFlag(FLAGS_tokenizer), &error);
  if (!tokenizer) return absl::InvalidArgumentError(error);
  const std::vector<int> prompt_ids =
      tokenizer->Encode(absl::GetFlag(FLAGS_prompt));
  const std::vector<int64_t> prompt(prompt_ids.begin(), prompt_ids.end());
  auto shards = datasets::TokenShardSet::Open(absl::GetFlag(FLAGS_tokens));
  if (!shards.ok()) return shards.status();
  const int length = std::min<int>(base->model->options().context_length, 128);
  auto sampler = datasets::BatchSampler::Create(shards->get(), 8, length,
                                                base->config.runtime().seed());
  if (!sampler.ok()) return sampler.status();

  torch::NoGradGuard no_grad;
  const auto unsteered_base = Generate(*base->model, prompt);
  std::string csv =
      "base,method,layer_kind,unit,alpha,concept_steered,concept_unsteered,"
      "concept_strength,nll_steered,nll_unsteered,seed\n";
  std::string examples =
      absl::StrCat("# Steering examples (prompt \"",
                   absl::GetFlag(FLAGS_prompt), "\")\n\nunsteered base: ",
                   absl::StrReplaceAll(
                       tokenizer->Decode(std::vector<int>(
                           unsteered_base[0].begin(), unsteered_base[0].end())),
                       {{"\n", " "}}),
                   "\n");
  for (const std::string& path : fits) {
    auto replacement = train::LoadReplacement(path);
    if (!replacement.ok()) return replacement.status();
    const train::LoadedModel* fitted = &replacement->loaded;
    const config::FfnReplacement& spec = replacement->spec;
    const std::shared_ptr<layers::SparseReplacementImpl>& sparse =
        replacement->layer;
    layers::GptImpl& model = *fitted->model;
    layers::HookPoint* codes_hook = model.FindHook(absl::StrCat(
        "blocks.", spec.layer(),
        spec.on_output() ? ".ffn.sae.hook_codes" : ".ffn.hook_hidden"));
    if (codes_hook == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": its model has no code hook at block ", spec.layer()));
    }
    // Reference activations: the codes of every position of held-out windows.
    std::vector<torch::Tensor> codes;
    std::vector<int64_t> reference_tokens;
    codes_hook->Add(layers::CaptureHook(&codes));
    const int batches = absl::GetFlag(FLAGS_reference_batches);
    for (int b = 0; b < batches; ++b) {
      const datasets::TokenBatch batch = sampler->EvalBatch(b, batches);
      model.Hidden(torch::tensor(batch.inputs, torch::kLong)
                       .view({batch.batch_size, batch.sequence_length}));
      reference_tokens.insert(reference_tokens.end(), batch.inputs.begin(),
                              batch.inputs.end());
    }
    codes_hook->Clear();
    const torch::Tensor activations =
        torch::cat(codes).reshape({-1, sparse->units()});
    const torch::Tensor token_ids = torch::tensor(reference_tokens);
    const torch::Tensor unit_max = std::get<0>(activations.max(0));
    const double typical =
        unit_max.masked_select(unit_max > 0).numel() > 0
            ? unit_max.masked_select(unit_max > 0).mean().item<double>()
            : 1.0;
    const auto unsteered = Generate(model, prompt);
    const double nll_unsteered = MeanNll(*base->model, prompt, unsteered);
    const int units =
        std::min<int64_t>(absl::GetFlag(FLAGS_units), sparse->units());
    for (int unit = 0; unit < units; ++unit) {
      const double peak = unit_max[unit].item<double>();
      const double alpha =
          absl::GetFlag(FLAGS_alpha_scale) * (peak > 0 ? peak : typical);
      const std::set<int64_t> concept_tokens =
          TopActivatingTokens(activations.select(1, unit), token_ids, 10);
      codes_hook->Add([unit, alpha](const torch::Tensor& c) {
        torch::Tensor steered = c.clone();
        steered.select(-1, unit).add_(alpha);
        return steered;
      });
      const auto steered = Generate(model, prompt);
      codes_hook->Clear();
      const double concept_steered = ConceptShare(steered, concept_tokens);
      const double concept_unsteered = ConceptShare(unsteered, concept_tokens);
      absl::StrAppendFormat(
          &csv, "%s,%s,%s,%d,%.4f,%.6f,%.6f,%.6f,%.6f,%.6f,%d\n",
          absl::GetFlag(FLAGS_base_name), fitted->config.name(), spec.ffn(),
          unit, alpha, concept_steered, concept_unsteered,
          concept_steered - concept_unsteered,
          MeanNll(*base->model, prompt, steered), nll_unsteered,
          absl::GetFlag(FLAGS_seed));
      if (unit < 3) {
        std::string top;
        for (int64_t id : concept_tokens) {
          absl::StrAppend(&top, top.empty() ? "" : " ",
                          tokenizer->Piece(static_cast<int>(id)));
        }
        absl::StrAppend(
            &examples, "\n", fitted->config.name(), " unit ", unit,
            " (top tokens: ", top, "; alpha ", absl::StrFormat("%.2f", alpha),
            "): ",
            absl::StrReplaceAll(tokenizer->Decode(std::vector<int>(
                                    steered[0].begin(), steered[0].end())),
                                {{"\n", " "}}),
            "\n");
      }
    }
    std::fprintf(stderr, "steer: %s: %d units steered\n",
                 fitted->config.name().c_str(), units);
  }
  // The table and its examples appear together or not at all.
  StagedOutputs outputs;
  if (!absl::GetFlag(FLAGS_examples).empty()) {
    if (absl::Status s =
            outputs.WriteFile(absl::GetFlag(FLAGS_examples), examples);
        !s.ok()) {
      return s;
    }
  }
  if (absl::Status s = outputs.WriteFile(absl::GetFlag(FLAGS_out), csv);
      !s.ok()) {
    return s;
  }
  return outputs.Commit();
}

}  // namespace
}  // namespace sparse_layers::analysis

int main(int argc, char** argv) {
  const std::vector<std::string> fits = sparse_layers::InitMain(
      argc, argv, "Steers fitted replacement layers' units and scores them.");
  return sparse_layers::RunMain(
      [&] { return sparse_layers::analysis::Run(fits); });
}
