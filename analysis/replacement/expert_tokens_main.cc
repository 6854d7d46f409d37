// expert_tokens: the first units of fitted replacement layers and the tokens
// they fire on (analysis/replacement/expert_tokens.h; MxD arXiv:2505.21364
// App. C.3, Figs. 23-24).
//
//   expert_tokens --base=lm.pt --tokens=.../test.tokens.textproto
//       --tokenizer=bpe.model --out=units.csv --listing_out=units.txt
//       mxd_k8.pt tc_k8.pt ...
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "analysis/replacement/expert_tokens.h"
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
ABSL_FLAG(std::string, base_name, "base", "The base model's name in the CSV");
ABSL_FLAG(std::string, tokens, "", "Held-out token split (manifest)");
ABSL_FLAG(std::string, tokenizer, "", "The base model's tokenizer");
ABSL_FLAG(int, units, 8, "The first units listed per fit");
ABSL_FLAG(int, contexts, 5, "Top contexts per unit");
ABSL_FLAG(int, batches, 8, "Test batches read");
ABSL_FLAG(int, batch_size, 16, "Windows per batch");
ABSL_FLAG(std::string, out, "", "CSV path: one row per listed unit");
ABSL_FLAG(std::string, listing_out, "", "Text path: each unit's contexts");

namespace sparse_layers::analysis {
namespace {

absl::Status Run(const std::vector<std::string>& replacements) {
  RETURN_IF_ERROR(
      FirstError({RequiredFile(FLAGS_base), RequiredFile(FLAGS_tokens),
                  RequiredFile(FLAGS_tokenizer), RequiredFlag(FLAGS_out),
                  RequiredFlag(FLAGS_listing_out), FlagAtLeast(FLAGS_units, 1),
                  FlagAtLeast(FLAGS_contexts, 1), FlagAtLeast(FLAGS_batches, 1),
                  FlagAtLeast(FLAGS_batch_size, 1),
                  FitsGiven("expert_tokens", "fitted layer", replacements)}));
  RETURN_IF_ERROR(AcquireCpuSlotIfRequested(absl::GetFlag(FLAGS_threads)));
  ASSIGN_OR_RETURN(layers::LoadedModel base,
                   layers::LoadModel(absl::GetFlag(FLAGS_base)));
  ASSIGN_OR_RETURN(const auto tokens,
                   datasets::TokenShardSet::Open(absl::GetFlag(FLAGS_tokens)));
  std::string error;
  auto tokenizer =
      datasets::Tokenizer::Load(absl::GetFlag(FLAGS_tokenizer), &error);
  if (!tokenizer) return absl::InvalidArgumentError(error);
  RETURN_IF_ERROR(
      datasets::CheckEncodedWith(*tokens, absl::GetFlag(FLAGS_tokenizer)));
  RETURN_IF_ERROR(datasets::CheckFitsModelVocabulary(
      *tokens, base.model->options().vocab_size, absl::GetFlag(FLAGS_base)));
  ExpertTokensOptions options;
  options.base_name = absl::GetFlag(FLAGS_base_name);
  options.units = absl::GetFlag(FLAGS_units);
  options.contexts = absl::GetFlag(FLAGS_contexts);
  options.batches = absl::GetFlag(FLAGS_batches);
  options.batch_size = absl::GetFlag(FLAGS_batch_size);
  ASSIGN_OR_RETURN(const ExpertTokensTables tables,
                   ListExpertTokens(base, absl::GetFlag(FLAGS_base), *tokens,
                                    *tokenizer, replacements, options));
  StagedOutputs outputs;  // Both or neither.
  RETURN_IF_ERROR(outputs.WriteFile(absl::GetFlag(FLAGS_out), tables.units));
  RETURN_IF_ERROR(
      outputs.WriteFile(absl::GetFlag(FLAGS_listing_out), tables.listing));
  return outputs.Commit();
}

}  // namespace
}  // namespace sparse_layers::analysis

int main(int argc, char** argv) {
  const std::vector<std::string> replacements = sparse_layers::InitMain(
      argc, argv, "Lists the tokens the first units of fitted layers fire on.");
  return sparse_layers::RunMain(
      [&] { return sparse_layers::analysis::Run(replacements); });
}
