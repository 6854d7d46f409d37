#include "analysis/steering/steering.h"

#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "analysis/steering/steering_metrics.h"
#include "base/common/status_macros.h"
#include "models/sampling.h"
#include "ops/hooks/hook_point.h"

namespace sparse_layers::analysis {
namespace {

layers::SamplingOptions SamplingOf(const SteeringOptions& options) {
  layers::SamplingOptions sampling;
  sampling.new_tokens = options.new_tokens;
  sampling.temperature = options.temperature;
  sampling.top_p = options.top_p;
  sampling.frequency_penalty = options.frequency_penalty;
  return sampling;
}

// Sample s of every row set draws from seed + s, steered or not (paired).
std::vector<uint64_t> SampleSeeds(const SteeringOptions& options) {
  std::vector<uint64_t> seeds;
  for (int s = 0; s < options.samples; ++s) seeds.push_back(options.seed + s);
  return seeds;
}

double Mean(const std::vector<double>& values, size_t begin, size_t end) {
  double total = 0;
  for (size_t i = begin; i < end; ++i) total += values[i];
  return end > begin ? total / (end - begin) : 0;
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
  const SteeringOptions* options;
  std::vector<int64_t> prompt;
  std::vector<datasets::TokenBatch> reference;
  torch::Tensor held_out_inputs;   // (B, T): the alpha sweep's windows
  torch::Tensor held_out_targets;  // (B, T)
  SteeringTables tables;
};

std::string Text(const datasets::Tokenizer& tokenizer,
                 const std::vector<int64_t>& ids) {
  return absl::StrReplaceAll(
      tokenizer.Decode(std::vector<int>(ids.begin(), ids.end())),
      {{"\n", " "}});
}

absl::Status SteerLayer(const SteeredLayer& layer, SteeringRun& run) {
  const SteeringOptions& options = *run.options;
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
  if (codes.empty()) {  // A hook off the forward path (an SAE hook, no SAE).
    return absl::FailedPreconditionError(
        absl::StrCat(layer.method, ": ", layer.codes_hook->name(),
                     " saw no codes on the reference text"));
  }
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
  const size_t units = std::min<size_t>(options.units, live.size());
  std::vector<int64_t> calibration(
      live.begin() + units,
      live.begin() +
          std::min<size_t>(live.size(), units + options.calibration_units));
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
  for (double scale : options.alpha_grid) {
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
  const double alpha_scale = ChooseAlphaScale(sweep, options.max_ce_increase);
  absl::StrAppend(&run.tables.examples, "\n", layer.method,
                  " alpha sweep over ", calibration.size(),
                  " held-out units (scale: concept mass "
                  "gain / CE increase):",
                  sweep_log, " chosen ", absl::StrFormat("%g", alpha_scale),
                  "\n");

  // Every generation of the layer decoded as one batch: rows [0, samples)
  // unsteered, then each steered unit's samples, with the same seeds.
  const std::vector<uint64_t> sample_seeds = SampleSeeds(options);
  const size_t samples = sample_seeds.size();
  std::vector<uint64_t> seeds = sample_seeds;
  std::vector<int64_t> row_units(samples, 0);
  std::vector<double> row_alphas(samples, 0.0), alphas;
  for (size_t i = 0; i < units; ++i) {
    alphas.push_back(alpha_scale * unit_max[live[i]].item<double>());
    seeds.insert(seeds.end(), sample_seeds.begin(), sample_seeds.end());
    row_units.insert(row_units.end(), samples, live[i]);
    row_alphas.insert(row_alphas.end(), samples, alphas.back());
  }
  layer.codes_hook->Add(
      AddToRowUnitHook(std::move(row_units), std::move(row_alphas)));
  const std::vector<std::vector<int64_t>> generations =
      layers::SampleRows(model, run.prompt, SamplingOf(options), seeds);
  layer.codes_hook->Clear();
  const std::vector<double> nlls =
      ContinuationNlls(*run.base, run.prompt, generations);
  const std::vector<std::vector<int64_t>> unsteered(
      generations.begin(), generations.begin() + samples);
  const double nll_unsteered = Mean(nlls, 0, samples);
  for (size_t i = 0; i < units; ++i) {
    const int64_t unit = live[i];
    const double alpha = alphas[i];
    const std::set<int64_t>& concept = concept_of(unit);
    const HeldOutEffect held_out_effect = HeldOutSteeringEffect(
        model, *layer.codes_hook, unit, alpha, held_out, concept);
    const size_t first = (i + 1) * samples;
    const std::vector<std::vector<int64_t>> steered(
        generations.begin() + first, generations.begin() + first + samples);
    const double concept_steered = ConceptShare(steered, concept);
    const double concept_unsteered = ConceptShare(unsteered, concept);
    absl::StrAppendFormat(
        &run.tables.csv,
        "%s,%s,%s,%d,%g,%.4f,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%d\n",
        options.base_name, layer.method, layer.layer_kind, unit, alpha_scale,
        alpha, concept_steered, concept_unsteered,
        concept_steered - concept_unsteered, Mean(nlls, first, first + samples),
        nll_unsteered, held_out_effect.concept_mass_gain,
        held_out_effect.ce_increase, options.seed);
    if (i < 3) {
      std::string top;
      for (int64_t id : concept) {
        absl::StrAppend(&top, top.empty() ? "" : " ",
                        run.tokenizer->Piece(static_cast<int>(id)));
      }
      absl::StrAppend(&run.tables.examples, layer.method, " unit ", unit,
                      " (top tokens: ", top, "; alpha ",
                      absl::StrFormat("%.2f", alpha),
                      "): ", Text(*run.tokenizer, steered[0]), "\n");
    }
  }
  std::fprintf(stderr, "steer: %s: %zu units steered at alpha scale %g\n",
               layer.method.c_str(), units, alpha_scale);
  return absl::OkStatus();
}

// Reference windows (top tokens, peaks) and disjoint held-out windows (the
// alpha sweep), spread over the split.
absl::Status SampleWindows(const layers::LoadedModel& base,
                           const datasets::TokenShardSet& tokens,
                           SteeringRun& run) {
  const int length = std::min<int>(base.model->options().context_length, 128);
  ASSIGN_OR_RETURN(const datasets::BatchSampler sampler,
                   datasets::BatchSampler::Create(
                       &tokens, 8, length, base.config.runtime().seed()));
  const int reference_batches = run.options->reference_batches;
  const int all_batches = reference_batches + run.options->sweep_batches;
  std::vector<torch::Tensor> sweep_inputs, sweep_targets;
  for (int b = 0; b < all_batches; ++b) {
    datasets::TokenBatch batch = sampler.EvalBatch(b, all_batches);
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
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<double>> ParseAlphaGrid(absl::string_view text) {
  std::vector<double> grid;
  for (absl::string_view field : absl::StrSplit(text, ',')) {
    double value = 0;
    if (!absl::SimpleAtod(field, &value) || !(value > 0) || value > 1e6) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--alpha_grid needs positive numbers, got '", field, "'"));
    }
    grid.push_back(value);
  }
  return grid;
}

absl::StatusOr<SteeringTables> Steer(
    const std::string& base_path, const layers::LoadedModel& base,
    const datasets::Tokenizer& tokenizer, const datasets::TokenShardSet& tokens,
    const std::vector<layers::LoadedReplacement>& fits,
    const SteeringOptions& options) {
  if (fits.empty()) {
    return absl::InvalidArgumentError(
        "no fits given: steering needs at least one fitted layer");
  }
  torch::NoGradGuard no_grad;
  SteeringRun run;
  run.base = base.model.get();
  run.tokenizer = &tokenizer;
  run.options = &options;
  const std::vector<int> prompt_ids = tokenizer.Encode(options.prompt);
  run.prompt.assign(prompt_ids.begin(), prompt_ids.end());
  RETURN_IF_ERROR(SampleWindows(base, tokens, run));
  run.tables.csv =
      "base,method,layer_kind,unit,alpha_scale,alpha,concept_steered,"
      "concept_unsteered,concept_strength,nll_steered,nll_unsteered,"
      "heldout_concept_gain,heldout_ce_increase,seed\n";
  run.tables.examples = absl::StrCat(
      "# Steering examples (prompt \"", options.prompt,
      "\")\n\nunsteered base: ",
      Text(tokenizer, layers::SampleRows(*run.base, run.prompt,
                                         SamplingOf(options), {options.seed})
                          .front()),
      "\n");

  // The dense baseline: the base model's own FFN neurons at the fits' block.
  const int block = fits.front().spec.layer();
  layers::HookPoint* neurons =
      run.base->FindHook(absl::StrCat("blocks.", block, ".ffn.hook_hidden"));
  if (neurons == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(base_path, ": the base model has no block ", block));
  }
  if (options.dense_baseline) {
    RETURN_IF_ERROR(
        SteerLayer({run.base, neurons, absl::StrCat(options.base_name, "_mlp"),
                    "mlp_neurons"},
                   run));
  }
  for (const layers::LoadedReplacement& fit : fits) {
    const config::FfnReplacement& spec = fit.spec;
    layers::GptImpl& model = *fit.loaded.model;
    layers::HookPoint* codes_hook = model.FindHook(absl::StrCat(
        "blocks.", spec.layer(),
        spec.on_output() ? ".ffn.sae.hook_codes" : ".ffn.hook_hidden"));
    if (codes_hook == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          fit.path, ": its model has no code hook at block ", spec.layer()));
    }
    RETURN_IF_ERROR(SteerLayer(
        {&model, codes_hook, fit.loaded.config.name(), spec.ffn()}, run));
  }
  return std::move(run.tables);
}

}  // namespace sparse_layers::analysis
