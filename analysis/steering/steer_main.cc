// steer: the steering table and example generations of
// analysis/steering/steering.h (MxD arXiv:2505.21364 Sec. 3.2.2, Fig. 5) for
// the base model's FFN neurons and each fitted replacement layer given.
//
//   steer --base=lm.pt --tokenizer=bpe.model --tokens=test.tokens.textproto
//       --seed=1 --out=steering.csv --examples=examples.txt tc.pt mxd.pt
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "analysis/steering/steering.h"
#include "base/common/cpu_slots.h"
#include "base/common/staged_outputs.h"
#include "base/common/status_macros.h"
#include "datasets/text/shard_pairing.h"
#include "datasets/text/token_shards.h"
#include "datasets/text/tokenizer.h"
#include "models/model_loader.h"
#include "ops/backend/torch_init.h"

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
ABSL_FLAG(bool, dense_baseline, true,
          "Also steer the base model's own FFN neurons (rows mlp_neurons)");
ABSL_FLAG(std::string, out, "", "CSV path");
ABSL_FLAG(std::string, examples, "", "Text file with example generations");

namespace sparse_layers::analysis {
namespace {

absl::Status Run(const std::vector<std::string>& fit_paths) {
  RETURN_IF_ERROR(FirstError(
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
       FitsGiven("steer", "fitted layer", fit_paths)}));
  SteeringOptions options;
  ASSIGN_OR_RETURN(options.alpha_grid,
                   ParseAlphaGrid(absl::GetFlag(FLAGS_alpha_grid)));
  RETURN_IF_ERROR(AcquireCpuSlotIfRequested(absl::GetFlag(FLAGS_threads)));
  const std::string base_path = absl::GetFlag(FLAGS_base);
  ASSIGN_OR_RETURN(const layers::LoadedModel base,
                   layers::LoadModel(base_path));
  std::string error;
  auto tokenizer =
      datasets::Tokenizer::Load(absl::GetFlag(FLAGS_tokenizer), &error);
  if (!tokenizer) return absl::InvalidArgumentError(error);
  ASSIGN_OR_RETURN(auto tokens,
                   datasets::TokenShardSet::Open(absl::GetFlag(FLAGS_tokens)));
  RETURN_IF_ERROR(
      datasets::CheckEncodedWith(*tokens, absl::GetFlag(FLAGS_tokenizer)));
  RETURN_IF_ERROR(datasets::CheckFitsModelVocabulary(
      *tokens, base.model->options().vocab_size, base_path));
  ASSIGN_OR_RETURN(const std::vector<layers::LoadedReplacement> fits,
                   layers::LoadReplacements(fit_paths));
  options.base_name = absl::GetFlag(FLAGS_base_name);
  options.prompt = absl::GetFlag(FLAGS_prompt);
  options.reference_batches = absl::GetFlag(FLAGS_reference_batches);
  options.sweep_batches = absl::GetFlag(FLAGS_sweep_batches);
  options.units = absl::GetFlag(FLAGS_units);
  options.samples = absl::GetFlag(FLAGS_samples);
  options.new_tokens = absl::GetFlag(FLAGS_new_tokens);
  options.max_ce_increase = absl::GetFlag(FLAGS_max_ce_increase);
  options.calibration_units = absl::GetFlag(FLAGS_calibration_units);
  options.temperature = absl::GetFlag(FLAGS_temperature);
  options.top_p = absl::GetFlag(FLAGS_top_p);
  options.frequency_penalty = absl::GetFlag(FLAGS_frequency_penalty);
  options.seed = absl::GetFlag(FLAGS_seed);
  options.dense_baseline = absl::GetFlag(FLAGS_dense_baseline);
  ASSIGN_OR_RETURN(const SteeringTables tables,
                   Steer(base_path, base, *tokenizer, *tokens, fits, options));

  // The table and its examples appear together or not at all.
  StagedOutputs outputs;
  if (!absl::GetFlag(FLAGS_examples).empty()) {
    RETURN_IF_ERROR(
        outputs.WriteFile(absl::GetFlag(FLAGS_examples), tables.examples));
  }
  RETURN_IF_ERROR(outputs.WriteFile(absl::GetFlag(FLAGS_out), tables.csv));
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
