// full_sparsification: every fitted block's attention replaced at once by its
// Lorsa and the induction circuit read off by head ablation (Lorsa,
// arXiv:2504.20938 App. H, Fig. 16); analysis/attention/full_sparsification.h.
//
//   full_sparsification --base=lm.pt --tokens=test.tokens.textproto
//       --tokenizer=bpe.model --out_dir=DIR lorsa_b0_k_s1.pt lorsa_b1_k_s1.pt
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "analysis/attention/full_sparsification.h"
#include "analysis/attention/lorsa_evaluation.h"
#include "base/common/cpu_slots.h"
#include "base/common/file_io.h"
#include "base/common/staged_outputs.h"
#include "base/common/status_macros.h"
#include "datasets/text/shard_pairing.h"
#include "datasets/text/token_shards.h"
#include "datasets/text/tokenizer.h"
#include "models/model_loader.h"
#include "ops/backend/torch_init.h"

ABSL_FLAG(std::string, base, "", "The base model (.pt)");
ABSL_FLAG(std::string, tokens, "", "Held-out token split (manifest)");
ABSL_FLAG(std::string, tokenizer, "", "The base model's tokenizer");
ABSL_FLAG(int, batches, 16, "CE evaluation batches of 16 windows");
ABSL_FLAG(int, probe_sequences, 64, "Repeated-span probe sequences");
ABSL_FLAG(int, probe_period, 16, "Length of the repeated random span");
ABSL_FLAG(std::string, probe_words, "",
          "Optional: the words the base LM's repeated spans were drawn from");
ABSL_FLAG(int, sequence_length, 0,
          "CE window length, the fits' (0: the base model's context)");
ABSL_FLAG(std::string, out_dir, "", "Where the outputs go");

namespace sparse_layers::analysis {
namespace {

absl::Status Run(const std::vector<std::string>& paths) {
  RETURN_IF_ERROR(FirstError(
      {RequiredFile(FLAGS_base), RequiredFile(FLAGS_tokens),
       RequiredFile(FLAGS_tokenizer), RequiredFlag(FLAGS_out_dir),
       FlagAtLeast(FLAGS_batches, 1), FlagAtLeast(FLAGS_probe_sequences, 1),
       FlagAtLeast(FLAGS_probe_period, 1),
       FlagAtLeast(FLAGS_sequence_length, 0),
       FitsGiven("full_sparsification", "Lorsa fit", paths)}));
  RETURN_IF_ERROR(AcquireCpuSlotIfRequested(absl::GetFlag(FLAGS_threads)));
  ASSIGN_OR_RETURN(const layers::LoadedModel base,
                   layers::LoadModel(absl::GetFlag(FLAGS_base)));
  std::string error;
  auto tok = datasets::Tokenizer::Load(absl::GetFlag(FLAGS_tokenizer), &error);
  if (!tok) return absl::InvalidArgumentError(error);
  ASSIGN_OR_RETURN(auto tokens,
                   datasets::TokenShardSet::Open(absl::GetFlag(FLAGS_tokens)));
  RETURN_IF_ERROR(
      datasets::CheckEncodedWith(*tokens, absl::GetFlag(FLAGS_tokenizer)));
  ASSIGN_OR_RETURN(std::vector<LorsaFit> fits, LoadLorsaFits(paths));
  FullSparsificationOptions options;
  options.batches = absl::GetFlag(FLAGS_batches);
  options.probe_sequences = absl::GetFlag(FLAGS_probe_sequences);
  options.probe_period = absl::GetFlag(FLAGS_probe_period);
  options.probe_words = absl::GetFlag(FLAGS_probe_words);
  options.sequence_length = absl::GetFlag(FLAGS_sequence_length);
  ASSIGN_OR_RETURN(const FullSparsificationTables tables,
                   FullySparsify(base, *tok, *tokens, fits, options));
  const std::string dir = absl::GetFlag(FLAGS_out_dir);
  return StagedOutputs().WriteFilesAndCommit(
      dir, {{"sparsified.csv", tables.model},
            {"circuit.csv", tables.circuit},
            {"circuit_summary.csv", tables.circuit_summary}});
}

}  // namespace
}  // namespace sparse_layers::analysis

int main(int argc, char** argv) {
  const std::vector<std::string> fits = sparse_layers::InitMain(
      argc, argv, "Full sparsification with Lorsa and its induction circuit.");
  return sparse_layers::RunMain(
      [&] { return sparse_layers::analysis::Run(fits); });
}
