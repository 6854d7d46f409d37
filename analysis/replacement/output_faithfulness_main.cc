// output_faithfulness: how faithfully fitted replacement layers carry the
// base model's behaviour to its output (analysis/replacement/
// output_faithfulness.h; MxD arXiv:2505.21364 App. B.1, Figs. 6-7).
//
//   output_faithfulness --base=lm.pt --tokens=.../test.tokens.textproto
//       --out=faithfulness.csv --prefix_match_out=prefix_match.csv
//       [--tokenizer=bpe.model --examples_out=examples.txt]
//       tc_k8.pt mxd_k8.pt ...
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "analysis/replacement/output_faithfulness.h"
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
ABSL_FLAG(std::string, base_name, "base", "The base model's name in the CSVs");
ABSL_FLAG(std::string, tokens, "", "Held-out token split (manifest)");
ABSL_FLAG(int, prompt_batches, 4, "Test batches whose windows give prompts");
ABSL_FLAG(int, batch_size, 32, "Windows per prompt batch");
ABSL_FLAG(int, prompt_tokens, 4, "Tokens of each prompt");
ABSL_FLAG(int, new_tokens, 32, "Greedy tokens generated per prompt (T)");
ABSL_FLAG(int, kl_batches, 8, "Test batches read for KL and top-1 agreement");
ABSL_FLAG(int, kl_batch_size, 4, "Windows per KL batch");
ABSL_FLAG(int, examples, 4, "Prompts whose continuations are listed");
ABSL_FLAG(int, examples_k, 8, "K of the fits whose continuations are listed");
ABSL_FLAG(std::string, tokenizer, "",
          "The base model's tokenizer (with --examples_out)");
ABSL_FLAG(std::string, examples_out, "",
          "Text path: example continuations (MxD Figs. 8-9); needs "
          "--tokenizer");
ABSL_FLAG(std::string, out, "", "CSV path: one row per fit");
ABSL_FLAG(std::string, prefix_match_out, "",
          "CSV path: each fit's prefix-match curve (MxD Figs. 6-7)");

namespace sparse_layers::analysis {
namespace {

absl::Status Run(const std::vector<std::string>& replacements) {
  RETURN_IF_ERROR(FirstError(
      {RequiredFile(FLAGS_base), RequiredFile(FLAGS_tokens),
       RequiredFlag(FLAGS_out), RequiredFlag(FLAGS_prefix_match_out),
       FlagAtLeast(FLAGS_prompt_batches, 1), FlagAtLeast(FLAGS_batch_size, 1),
       FlagAtLeast(FLAGS_prompt_tokens, 1), FlagAtLeast(FLAGS_new_tokens, 1),
       FlagAtLeast(FLAGS_kl_batches, 1), FlagAtLeast(FLAGS_kl_batch_size, 1),
       FlagAtLeast(FLAGS_examples, 1), FlagAtLeast(FLAGS_examples_k, 1),
       FilesExist("fit", replacements)}));
  const std::string examples_out = absl::GetFlag(FLAGS_examples_out);
  const std::string tokenizer_path = absl::GetFlag(FLAGS_tokenizer);
  if (examples_out.empty() != tokenizer_path.empty()) {
    return absl::InvalidArgumentError(
        "--examples_out and --tokenizer go together: the examples are decoded "
        "text");
  }
  RETURN_IF_ERROR(
      FitsGiven("output_faithfulness", "fitted layer", replacements));
  RETURN_IF_ERROR(AcquireCpuSlotIfRequested(absl::GetFlag(FLAGS_threads)));
  ASSIGN_OR_RETURN(layers::LoadedModel base,
                   layers::LoadModel(absl::GetFlag(FLAGS_base)));
  ASSIGN_OR_RETURN(const auto tokens,
                   datasets::TokenShardSet::Open(absl::GetFlag(FLAGS_tokens)));
  RETURN_IF_ERROR(datasets::CheckFitsModelVocabulary(
      *tokens, base.model->options().vocab_size, absl::GetFlag(FLAGS_base)));
  std::unique_ptr<datasets::Tokenizer> tokenizer;
  if (!tokenizer_path.empty()) {
    RETURN_IF_ERROR(RequiredFile(FLAGS_tokenizer));
    std::string error;
    tokenizer = datasets::Tokenizer::Load(tokenizer_path, &error);
    if (!tokenizer) return absl::InvalidArgumentError(error);
    RETURN_IF_ERROR(datasets::CheckEncodedWith(*tokens, tokenizer_path));
  }
  OutputFaithfulnessOptions options;
  options.base_name = absl::GetFlag(FLAGS_base_name);
  options.prompt_batches = absl::GetFlag(FLAGS_prompt_batches);
  options.batch_size = absl::GetFlag(FLAGS_batch_size);
  options.prompt_tokens = absl::GetFlag(FLAGS_prompt_tokens);
  options.new_tokens = absl::GetFlag(FLAGS_new_tokens);
  options.kl_batches = absl::GetFlag(FLAGS_kl_batches);
  options.kl_batch_size = absl::GetFlag(FLAGS_kl_batch_size);
  options.examples = absl::GetFlag(FLAGS_examples);
  options.examples_k = absl::GetFlag(FLAGS_examples_k);
  ASSIGN_OR_RETURN(
      const OutputFaithfulnessTables tables,
      EvaluateOutputFaithfulness(base, absl::GetFlag(FLAGS_base), *tokens,
                                 replacements, options, tokenizer.get()));
  StagedOutputs outputs;  // Every output or none.
  RETURN_IF_ERROR(
      outputs.WriteFile(absl::GetFlag(FLAGS_out), tables.faithfulness));
  RETURN_IF_ERROR(outputs.WriteFile(absl::GetFlag(FLAGS_prefix_match_out),
                                    tables.prefix_match));
  if (!examples_out.empty()) {
    RETURN_IF_ERROR(outputs.WriteFile(examples_out, tables.examples));
  }
  return outputs.Commit();
}

}  // namespace
}  // namespace sparse_layers::analysis

int main(int argc, char** argv) {
  const std::vector<std::string> replacements = sparse_layers::InitMain(
      argc, argv,
      "Compares fitted replacement layers' outputs with the base model's "
      "(greedy prefix match, next-token KL, top-1 agreement).");
  return sparse_layers::RunMain(
      [&] { return sparse_layers::analysis::Run(replacements); });
}
