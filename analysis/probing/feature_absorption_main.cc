// feature_absorption: feature absorption of SAEs on the first-letter task
// (Chanin et al. 2024, arXiv:2409.14507; SAEBench's absorption fraction,
// arXiv:2503.09532), analysis/probing/feature_absorption.h, one row per SAE
// (--out) and per SAE and letter (--letters_out), with --seed in a `seed`
// column (it resamples the words' split, so the claims engine pairs seeds).
//
//   feature_absorption --base=lm.pt --tokenizer=bpe.model --seed=1
//       --out=absorption.csv --letters_out=letters.csv sae_k8_s1.pt ...
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "analysis/probing/feature_absorption.h"
#include "analysis/probing/unit_probing.h"
#include "base/common/cpu_slots.h"
#include "base/common/file_io.h"
#include "base/common/staged_outputs.h"
#include "base/common/status_macros.h"
#include "datasets/text/tokenizer.h"
#include "models/model_loader.h"
#include "ops/backend/torch_init.h"

ABSL_FLAG(std::string, base, "", "The base model (.pt)");
ABSL_FLAG(std::string, base_name, "base", "The base model's name in the CSV");
ABSL_FLAG(std::string, tokenizer, "", "The base model's tokenizer");
ABSL_FLAG(int, max_words, 3000, "First-letter words kept");
ABSL_FLAG(uint64_t, seed, 42,
          "Seed of the words' split and the shuffled control (the CSV's seed)");
ABSL_FLAG(std::string, out, "", "CSV path: one row per SAE");
ABSL_FLAG(std::string, letters_out, "", "CSV path: one row per SAE and letter");

namespace sparse_layers::analysis {
namespace {

absl::Status Run(const std::vector<std::string>& paths) {
  RETURN_IF_ERROR(
      FirstError({RequiredFile(FLAGS_base), RequiredFile(FLAGS_tokenizer),
                  RequiredFlag(FLAGS_out), RequiredFlag(FLAGS_letters_out),
                  FlagAtLeast(FLAGS_max_words, 2), FilesExist("fit", paths)}));
  if (paths.empty()) return absl::InvalidArgumentError("no SAE fits given");
  RETURN_IF_ERROR(AcquireCpuSlotIfRequested(absl::GetFlag(FLAGS_threads)));
  ASSIGN_OR_RETURN(const layers::LoadedModel base,
                   layers::LoadModel(absl::GetFlag(FLAGS_base)));
  std::string error;
  auto tokenizer =
      datasets::Tokenizer::Load(absl::GetFlag(FLAGS_tokenizer), &error);
  if (!tokenizer) return absl::InvalidArgumentError(error);
  ASSIGN_OR_RETURN(const std::vector<ProbedFit> fits, LoadProbedFits(paths));
  AbsorptionOptions options;
  options.base_name = absl::GetFlag(FLAGS_base_name);
  options.max_words = absl::GetFlag(FLAGS_max_words);
  options.seed = absl::GetFlag(FLAGS_seed);
  ASSIGN_OR_RETURN(const AbsorptionTables tables,
                   MeasureAbsorption(*base.model, *tokenizer, fits, options));
  StagedOutputs outputs;  // Both tables or neither.
  RETURN_IF_ERROR(outputs.WriteFile(absl::GetFlag(FLAGS_out), tables.summary));
  RETURN_IF_ERROR(
      outputs.WriteFile(absl::GetFlag(FLAGS_letters_out), tables.letters));
  return outputs.Commit();
}

}  // namespace
}  // namespace sparse_layers::analysis

int main(int argc, char** argv) {
  const std::vector<std::string> fits = sparse_layers::InitMain(
      argc, argv, "Feature absorption of SAEs on the first-letter task.");
  return sparse_layers::RunMain(
      [&] { return sparse_layers::analysis::Run(fits); });
}
