// sparse_probe: the CSV of analysis/probing/unit_probing.h, sparse probing of
// a base model's FFN units and of replacement layers fitted to it (MxD
// arXiv:2505.21364 Sec. 3.2.1, Fig. 4, Sec. B.5) on labelled JSONL files,
// with --seed in a `seed` column: one seed's probes run on that seed's fits,
// so the claims engine pairs them.
//
//   sparse_probe --base=lm.pt --tokenizer=bpe.model --out=probe.csv --seed=1
//       --data=brown_genre.jsonl,spam_ham.jsonl tc_k16_s1.pt mxd_k16_s1.pt ...
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
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
ABSL_FLAG(std::vector<std::string>, data, {}, "Labelled JSONL files");
ABSL_FLAG(int, layer, -1, "Block to probe (-1: the fits' block)");
ABSL_FLAG(int, max_tokens, 127, "Tokens per text (MxD Sec. B.5)");
ABSL_FLAG(int, candidates, 100, "Units fitted per class (top mean difference)");
ABSL_FLAG(uint64_t, seed, 42,
          "Seed of the random control and the splits (the CSV's seed)");
ABSL_FLAG(std::string, out, "", "CSV path");
ABSL_FLAG(std::string, densities_out, "",
          "CSV path: the best units' activation densities by class (MxD Figs. "
          "14-15, 17)");

namespace sparse_layers::analysis {
namespace {

absl::Status Run(const std::vector<std::string>& paths) {
  RETURN_IF_ERROR(FirstError(
      {RequiredFile(FLAGS_base), RequiredFile(FLAGS_tokenizer),
       RequiredFile(FLAGS_data), RequiredFlag(FLAGS_out),
       RequiredFlag(FLAGS_densities_out), FlagAtLeast(FLAGS_layer, -1),
       FlagAtLeast(FLAGS_max_tokens, 1), FlagAtLeast(FLAGS_candidates, 1),
       FilesExist("fit", paths)}));
  RETURN_IF_ERROR(AcquireCpuSlotIfRequested(absl::GetFlag(FLAGS_threads)));
  ASSIGN_OR_RETURN(const layers::LoadedModel base,
                   layers::LoadModel(absl::GetFlag(FLAGS_base)));
  std::string error;
  auto tokenizer =
      datasets::Tokenizer::Load(absl::GetFlag(FLAGS_tokenizer), &error);
  if (!tokenizer) return absl::InvalidArgumentError(error);
  ASSIGN_OR_RETURN(const std::vector<ProbedFit> fits, LoadProbedFits(paths));
  UnitProbingOptions options;
  options.data = absl::GetFlag(FLAGS_data);
  options.base_name = absl::GetFlag(FLAGS_base_name);
  options.layer = absl::GetFlag(FLAGS_layer);
  options.max_tokens = absl::GetFlag(FLAGS_max_tokens);
  options.candidates = absl::GetFlag(FLAGS_candidates);
  options.seed = absl::GetFlag(FLAGS_seed);
  ASSIGN_OR_RETURN(const UnitProbingTables tables,
                   ProbeUnits(*base.model, *tokenizer, fits, options));
  StagedOutputs outputs;  // Both tables or neither.
  RETURN_IF_ERROR(outputs.WriteFile(absl::GetFlag(FLAGS_out), tables.probes));
  RETURN_IF_ERROR(
      outputs.WriteFile(absl::GetFlag(FLAGS_densities_out), tables.densities));
  return outputs.Commit();
}

}  // namespace
}  // namespace sparse_layers::analysis

int main(int argc, char** argv) {
  const std::vector<std::string> fits = sparse_layers::InitMain(
      argc, argv, "Sparse probing of FFN units and replacement layers.");
  return sparse_layers::RunMain(
      [&] { return sparse_layers::analysis::Run(fits); });
}
