// steer: feature steering with fitted replacement layers (MxD
// arXiv:2505.21364 Sec. 3.2.2, Fig. 5, Sec. D.1). For each layer (the base
// model's own FFN neurons, the dense baseline, then each fit), alpha is added
// to one unit's code at every position (base neurons and Transcoder / Skip
// Transcoder: alpha d_n; MxD: alpha (c_n o D^T z); SAE on the FFN output:
// alpha times its decoder row), and --samples continuations of --prompt are
// sampled (top-p, temperature, frequency penalty as in the paper's code).
// Units are the layer's first --units live units (positive on reference text).
// alpha = alpha_scale x the unit's largest reference activation, alpha_scale
// chosen per layer on held-out windows: of --alpha_grid, the scale that most
// raises the probability of the units' concept tokens while costing at most
// --max_ce_increase nats of next-token CE, averaged over --calibration_units
// other live units (the paper's fixed alpha is for LLM-scale codes). Scores,
// without LLM judges:
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
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "analysis/steering/steering_metrics.h"
#include "datasets/text/token_shards.h"
#include "datasets/text/tokenizer.h"
#include "layers/backend/torch_init.h"
#include "layers/models/model_loader.h"
#include "layers/models/sampling.h"
#include "layers/replacement/sparse_replacement.h"
#include "tools/common/cpu_slots.h"
#include "tools/common/staged_outputs.h"

ABSL_FLAG(std::string, base, "", "The base model (.pt)");
ABSL_FLAG(std::string, base_name, "base", "The base model's name in the CSV");
ABSL_FLAG(std::string, tokenizer, "", "The base model's tokenizer");
ABSL_FLAG(std::string, tokens, "", "Held-out token split (reference text)");
ABSL_FLAG(int, reference_batches, 8, "Reference windows / 8 for top tokens");
ABSL_FLAG(std::string, prompt, "Let's talk about ", "Steering prompt");
ABSL_FLAG(int, units, 16, "Steer units 0..units-1 of each layer");
ABSL_FLAG(int, samples, 4, "Samples per unit");
ABSL_FLAG(int, new_tokens, 32, "Tokens per sample");
ABSL_FLAG(std::string, alpha_grid, "0.5,1,2,4,8,16,32",
          "alpha scales swept on held-out windows (alpha = scale x the "
          "unit's max activation)");
ABSL_FLAG(double, max_ce_increase, 1.0,
          "Held-out CE cost (nats) the chosen alpha scale may add");
ABSL_FLAG(int, calibration_units, 8,
          "Live units (after the steered ones) the alpha sweep averages over");
ABSL_FLAG(int, sweep_batches, 2, "Held-out windows / 8 for the alpha sweep");
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

absl::StatusOr<std::vector<double>> AlphaGrid() {
  std::vector<double> grid;
  for (absl::string_view field :
       absl::StrSplit(absl::GetFlag(FLAGS_alpha_grid), ',')) {
    double value = 0;
    if (!absl::SimpleAtod(field, &value) || !(value > 0) || value > 1e6) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--alpha_grid needs positive numbers, got '", field, "'"));
    }
    grid.push_back(value);
  }
  return grid;
}

// One layer whose units are steered: a model and the hook carrying the codes.
struct SteeredLayer {
  layers::GptImpl* model;
  layers::HookPoint* codes_hook;
  std::string method;      // the CSV's method (the fit's run name)
  std::string layer_kind;  // the CSV's layer_kind (the FFN registry name)
};

// Shared by every layer of one run: the text, the base model and the sinks.
struct SteeringRun {
  layers::GptImpl* base;
  const datasets::Tokenizer* tokenizer;
  std::vector<int64_t> prompt;
  std::vector<datasets::TokenBatch> reference;
  torch::Tensor held_out_inputs;   // (B, T): the alpha sweep's windows
  torch::Tensor held_out_targets;  // (B, T)
  std::vector<double> alpha_grid;
  std::string csv;
  std::string examples;
};

std::string Text(const datasets::Tokenizer& tokenizer,
                 const std::vector<int64_t>& ids) {
  return absl::StrReplaceAll(
      tokenizer.Decode(std::vector<int>(ids.begin(), ids.end())),
      {{"\n", " "}});
}

absl::Status SteerLayer(const SteeredLayer& layer, SteeringRun& run) {
  layers::GptImpl& model = *layer.model;
  // Reference activations: the codes of every position of held-out windows.
  std::vector<torch::Tensor> codes;
  std::vector<int64_t> reference_tokens;
  layer.codes_hook->Add(layers::CaptureHook(&codes));
  for (const datasets::TokenBatch& batch : run.reference) {
    model.Hidden(torch::tensor(batch.inputs, torch::kLong)
                     .view({batch.batch_size, batch.sequence_length}));
    reference_tokens.insert(reference_tokens.end(), batch.inputs.begin(),
                            batch.inputs.end());
  }
  layer.codes_hook->Clear();
  const int64_t width = codes.front().size(-1);
  const torch::Tensor activations = torch::cat(codes).reshape({-1, width});
  const torch::Tensor token_ids = torch::tensor(reference_tokens);
  const torch::Tensor unit_max = std::get<0>(activations.max(0));
  std::vector<int64_t> live;
  for (int64_t u = 0; u < width; ++u) {
    if (unit_max[u].item<double>() > 0) live.push_back(u);
  }
  if (live.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        layer.method, ": no unit is positive on the reference text"));
  }
  const size_t units =
      std::min<size_t>(absl::GetFlag(FLAGS_units), live.size());
  std::vector<int64_t> calibration(
      live.begin() + units,
      live.begin() +
          std::min<size_t>(live.size(),
                           units + absl::GetFlag(FLAGS_calibration_units)));
  // Too few live units to keep them apart: calibrate on the steered ones.
  if (calibration.empty())
    calibration.assign(live.begin(), live.begin() + units);
  std::map<int64_t, std::set<int64_t>> concept_tokens;
  auto concept_of = [&](int64_t unit) -> const std::set<int64_t>& {
    auto it = concept_tokens.find(unit);
    if (it == concept_tokens.end()) {
      it = concept_tokens
               .emplace(unit, TopActivatingTokens(activations.select(1, unit),
                                                  token_ids, 10))
               .first;
    }
    return it->second;
  };

  // The alpha sweep on held-out windows (this model's own unsteered baseline).
  const HeldOutText held_out =
      MakeHeldOutText(model, run.held_out_inputs, run.held_out_targets);
  std::vector<SweepPoint> sweep;
  std::string sweep_log;
  for (double scale : run.alpha_grid) {
    SweepPoint point{scale, {}};
    for (int64_t unit : calibration) {
      const HeldOutEffect e = HeldOutSteeringEffect(
          model, *layer.codes_hook, unit, scale * unit_max[unit].item<double>(),
          held_out, concept_of(unit));
      point.effect.concept_mass_gain +=
          e.concept_mass_gain / calibration.size();
      point.effect.ce_increase += e.ce_increase / calibration.size();
    }
    absl::StrAppendFormat(&sweep_log, " %g: +%.4f mass / +%.3f nats;", scale,
                          point.effect.concept_mass_gain,
                          point.effect.ce_increase);
    sweep.push_back(point);
  }
  const double alpha_scale =
      ChooseAlphaScale(sweep, absl::GetFlag(FLAGS_max_ce_increase));
  absl::StrAppend(&run.examples, "\n", layer.method, " alpha sweep over ",
                  calibration.size(),
                  " held-out units (scale: concept mass "
                  "gain / CE increase):",
                  sweep_log, " chosen ", absl::StrFormat("%g", alpha_scale),
                  "\n");

  const auto unsteered = Generate(model, run.prompt);
  const double nll_unsteered = MeanNll(*run.base, run.prompt, unsteered);
  for (size_t i = 0; i < units; ++i) {
    const int64_t unit = live[i];
    const double alpha = alpha_scale * unit_max[unit].item<double>();
    const std::set<int64_t>& concept = concept_of(unit);
    const HeldOutEffect held_out_effect = HeldOutSteeringEffect(
        model, *layer.codes_hook, unit, alpha, held_out, concept);
    layer.codes_hook->Add(AddToUnitHook(unit, alpha));
    const auto steered = Generate(model, run.prompt);
    layer.codes_hook->Clear();
    const double concept_steered = ConceptShare(steered, concept);
    const double concept_unsteered = ConceptShare(unsteered, concept);
    absl::StrAppendFormat(
        &run.csv, "%s,%s,%s,%d,%g,%.4f,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%d\n",
        absl::GetFlag(FLAGS_base_name), layer.method, layer.layer_kind, unit,
        alpha_scale, alpha, concept_steered, concept_unsteered,
        concept_steered - concept_unsteered,
        MeanNll(*run.base, run.prompt, steered), nll_unsteered,
        held_out_effect.concept_mass_gain, held_out_effect.ce_increase,
        absl::GetFlag(FLAGS_seed));
    if (i < 3) {
      std::string top;
      for (int64_t id : concept) {
        absl::StrAppend(&top, top.empty() ? "" : " ",
                        run.tokenizer->Piece(static_cast<int>(id)));
      }
      absl::StrAppend(&run.examples, layer.method, " unit ", unit,
                      " (top tokens: ", top, "; alpha ",
                      absl::StrFormat("%.2f", alpha),
                      "): ", Text(*run.tokenizer, steered[0]), "\n");
    }
  }
  std::fprintf(stderr, "steer: %s: %zu units steered at alpha scale %g\n",
               layer.method.c_str(), units, alpha_scale);
  return absl::OkStatus();
}

absl::Status Run(const std::vector<std::string>& fits) {
  if (absl::Status s = FirstError(
          {RequiredFile(FLAGS_base), RequiredFile(FLAGS_tokenizer),
           RequiredFile(FLAGS_tokens), RequiredFlag(FLAGS_out),
           FlagAtLeast(FLAGS_reference_batches, 1), FlagAtLeast(FLAGS_units, 1),
           FlagAtLeast(FLAGS_samples, 1), FlagAtLeast(FLAGS_new_tokens, 1),
           FlagAtLeast(FLAGS_calibration_units, 1),
           FlagAtLeast(FLAGS_sweep_batches, 1),
           FlagInRange(FLAGS_max_ce_increase, 1e-6, 1e6),
           FlagInRange(FLAGS_temperature, 1e-6, 1e6),
           FlagInRange(FLAGS_top_p, 1e-6, 1.0),
           FlagInRange(FLAGS_frequency_penalty, -1e6, 1e6),
           FilesExist("fit", fits)});
      !s.ok()) {
    return s;
  }
  if (fits.empty()) {
    return absl::InvalidArgumentError(
        "no fits given: steer needs at least one fitted layer (.pt)");
  }
  auto alpha_grid = AlphaGrid();
  if (!alpha_grid.ok()) return alpha_grid.status();
  if (absl::Status s = AcquireCpuSlotIfRequested(absl::GetFlag(FLAGS_threads));
      !s.ok()) {
    return s;
  }
  auto base = layers::LoadModel(absl::GetFlag(FLAGS_base));
  if (!base.ok()) return base.status();
  std::string error;
  auto tokenizer =
      datasets::Tokenizer::Load(absl::GetFlag(FLAGS_tokenizer), &error);
  if (!tokenizer) return absl::InvalidArgumentError(error);
  auto shards = datasets::TokenShardSet::Open(absl::GetFlag(FLAGS_tokens));
  if (!shards.ok()) return shards.status();
  const int length = std::min<int>(base->model->options().context_length, 128);
  auto sampler = datasets::BatchSampler::Create(shards->get(), 8, length,
                                                base->config.runtime().seed());
  if (!sampler.ok()) return sampler.status();

  torch::NoGradGuard no_grad;
  SteeringRun run;
  run.base = base->model.get();
  run.tokenizer = tokenizer.get();
  const std::vector<int> prompt_ids =
      tokenizer->Encode(absl::GetFlag(FLAGS_prompt));
  run.prompt.assign(prompt_ids.begin(), prompt_ids.end());
  run.alpha_grid = *alpha_grid;
  // Reference windows (top tokens, peaks) and disjoint held-out windows (the
  // alpha sweep), spread over the split.
  const int reference_batches = absl::GetFlag(FLAGS_reference_batches);
  const int all_batches =
      reference_batches + absl::GetFlag(FLAGS_sweep_batches);
  std::vector<torch::Tensor> sweep_inputs, sweep_targets;
  for (int b = 0; b < all_batches; ++b) {
    datasets::TokenBatch batch = sampler->EvalBatch(b, all_batches);
    if (b < reference_batches) {
      run.reference.push_back(std::move(batch));
      continue;
    }
    sweep_inputs.push_back(
        torch::tensor(batch.inputs, torch::kLong)
            .view({batch.batch_size, batch.sequence_length}));
    sweep_targets.push_back(
        torch::tensor(batch.targets, torch::kLong)
            .view({batch.batch_size, batch.sequence_length}));
  }
  run.held_out_inputs = torch::cat(sweep_inputs);
  run.held_out_targets = torch::cat(sweep_targets);
  run.csv =
      "base,method,layer_kind,unit,alpha_scale,alpha,concept_steered,"
      "concept_unsteered,concept_strength,nll_steered,nll_unsteered,"
      "heldout_concept_gain,heldout_ce_increase,seed\n";
  run.examples =
      absl::StrCat("# Steering examples (prompt \"",
                   absl::GetFlag(FLAGS_prompt), "\")\n\nunsteered base: ",
                   Text(*tokenizer, Generate(*run.base, run.prompt)[0]), "\n");

  std::vector<layers::LoadedReplacement> replacements;
  for (const std::string& path : fits) {
    auto replacement = layers::LoadReplacement(path);
    if (!replacement.ok()) return replacement.status();
    replacements.push_back(*std::move(replacement));
  }
  // The dense baseline: the base model's own FFN neurons at the fits' block.
  const int block = replacements.front().spec.layer();
  layers::HookPoint* neurons =
      run.base->FindHook(absl::StrCat("blocks.", block, ".ffn.hook_hidden"));
  if (neurons == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        absl::GetFlag(FLAGS_base), ": the base model has no block ", block));
  }
  if (absl::Status s = SteerLayer(
          {run.base, neurons,
           absl::StrCat(absl::GetFlag(FLAGS_base_name), "_mlp"), "mlp_neurons"},
          run);
      !s.ok()) {
    return s;
  }
  for (size_t i = 0; i < replacements.size(); ++i) {
    const layers::LoadedReplacement& replacement = replacements[i];
    const config::FfnReplacement& spec = replacement.spec;
    layers::GptImpl& model = *replacement.loaded.model;
    layers::HookPoint* codes_hook = model.FindHook(absl::StrCat(
        "blocks.", spec.layer(),
        spec.on_output() ? ".ffn.sae.hook_codes" : ".ffn.hook_hidden"));
    if (codes_hook == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          fits[i], ": its model has no code hook at block ", spec.layer()));
    }
    if (absl::Status s = SteerLayer(
            {&model, codes_hook, replacement.loaded.config.name(), spec.ffn()},
            run);
        !s.ok()) {
      return s;
    }
  }
  // The table and its examples appear together or not at all.
  StagedOutputs outputs;
  if (!absl::GetFlag(FLAGS_examples).empty()) {
    if (absl::Status s =
            outputs.WriteFile(absl::GetFlag(FLAGS_examples), run.examples);
        !s.ok()) {
      return s;
    }
  }
  if (absl::Status s = outputs.WriteFile(absl::GetFlag(FLAGS_out), run.csv);
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
