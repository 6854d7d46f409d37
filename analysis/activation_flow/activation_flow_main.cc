// activation_flow: the MoHD observation study (arXiv:2412.05644 Sec. 3) on
// trained models, flow.csv and sharing.csv of
// analysis/activation_flow/activation_flow.h.
//
//   activation_flow --models=dense=a.pt,mohd_x2=b.pt
//       --tokens=.../validation.tokens.textproto --out_dir=DIR
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "analysis/activation_flow/activation_flow.h"
#include "base/common/cpu_slots.h"
#include "base/common/file_io.h"
#include "base/common/keyed_paths.h"
#include "base/common/staged_outputs.h"
#include "base/common/status_macros.h"
#include "datasets/text/shard_pairing.h"
#include "datasets/text/token_shards.h"
#include "models/model_loader.h"
#include "ops/backend/torch_init.h"

ABSL_FLAG(std::vector<std::string>, models, {}, "name=checkpoint.pt, ...");
ABSL_FLAG(std::string, tokens, "", "Held-out token split manifest");
ABSL_FLAG(int, windows, 256,
          "Held-out windows (fewer when the split is shorter)");
ABSL_FLAG(int, sequence_length, 128, "Window length (capped at the context)");
ABSL_FLAG(int, shuffled_windows, 2000, "Random windows per shuffled null");
ABSL_FLAG(std::string, out_dir, "", "Where flow.csv and sharing.csv go");

namespace sparse_layers::analysis {
namespace {

absl::Status Run() {
  RETURN_IF_ERROR(
      FirstError({RequiredFlag(FLAGS_models), RequiredFile(FLAGS_tokens),
                  RequiredFlag(FLAGS_out_dir), FlagAtLeast(FLAGS_windows, 1),
                  FlagAtLeast(FLAGS_sequence_length, 2),
                  FlagAtLeast(FLAGS_shuffled_windows, 1)}));
  RETURN_IF_ERROR(AcquireCpuSlotIfRequested(absl::GetFlag(FLAGS_threads)));
  ASSIGN_OR_RETURN(const auto shards,
                   datasets::TokenShardSet::Open(absl::GetFlag(FLAGS_tokens)));
  ActivationFlowOptions options;
  options.windows = absl::GetFlag(FLAGS_windows);
  options.sequence_length = absl::GetFlag(FLAGS_sequence_length);
  options.shuffled_windows = absl::GetFlag(FLAGS_shuffled_windows);
  ASSIGN_OR_RETURN(const std::vector<KeyedPath> models,
                   KeyedPaths("models", "name", absl::GetFlag(FLAGS_models)));
  ActivationFlowTables tables;
  for (const auto& [name, path] : models) {
    ASSIGN_OR_RETURN(const layers::LoadedModel loaded, layers::LoadModel(path));
    RETURN_IF_ERROR(datasets::CheckFitsModelVocabulary(
        *shards, loaded.model->options().vocab_size, path));
    RETURN_IF_ERROR(tables.AddModel(name, *loaded.model, *shards, options));
  }
  const std::string dir = absl::GetFlag(FLAGS_out_dir);
  StagedOutputs outputs;  // Both tables or neither.
  RETURN_IF_ERROR(outputs.WriteFile(dir + "/flow.csv", tables.flow()));
  RETURN_IF_ERROR(outputs.WriteFile(dir + "/sharing.csv", tables.sharing()));
  return outputs.Commit();
}

}  // namespace
}  // namespace sparse_layers::analysis

int main(int argc, char** argv) {
  sparse_layers::InitMain(argc, argv,
                          "activation_flow --models=name=ckpt.pt,... "
                          "--tokens=T --out_dir=DIR");
  return sparse_layers::RunMain(sparse_layers::analysis::Run);
}
