// neuron_usage: neuron usage and co-activation of a product-key FFN model and
// of its untrained initialisation (analysis/neuron_usage/neuron_usage.h;
// sgatlin arXiv:2606.07414 App. C.1, Fig. 8).
//
//   neuron_usage --model=fact_lm_sgatlin_s1.pt
//       --tokens=.../validation.tokens.textproto
//       --usage_out=usage.csv --coactivation_out=coactivation.csv
//
// Rows name the model "<name>" and its initialisation "<name>_init" (the same
// config and seed's draws before training: what the routing geometry gives
// without learning).
#include <string>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "analysis/neuron_usage/neuron_usage.h"
#include "base/common/cpu_slots.h"
#include "base/common/staged_outputs.h"
#include "base/common/status_macros.h"
#include "datasets/text/shard_pairing.h"
#include "datasets/text/token_shards.h"
#include "models/model_loader.h"
#include "ops/backend/torch_init.h"

ABSL_FLAG(std::string, model, "", "A trained product-key FFN model (.pt)");
ABSL_FLAG(std::string, name, "sgatlin", "The model's name in the tables");
ABSL_FLAG(std::string, tokens, "", "Held-out token split manifest");
ABSL_FLAG(int, sequences, 128,
          "Held-out windows (fewer if the split is short)");
ABSL_FLAG(int, sequence_length, 128, "Window length (capped at the context)");
ABSL_FLAG(int, map_neurons, 64, "The co-activation map's first neurons");
ABSL_FLAG(std::string, usage_out, "", "usage.csv to write");
ABSL_FLAG(std::string, coactivation_out, "", "coactivation.csv to write");

namespace sparse_layers::analysis {
namespace {

absl::Status Run() {
  RETURN_IF_ERROR(FirstError(
      {RequiredFile(FLAGS_model), RequiredFile(FLAGS_tokens),
       RequiredFlag(FLAGS_usage_out), RequiredFlag(FLAGS_coactivation_out),
       FlagAtLeast(FLAGS_sequences, 1), FlagAtLeast(FLAGS_sequence_length, 2),
       FlagAtLeast(FLAGS_map_neurons, 1)}));
  RETURN_IF_ERROR(AcquireCpuSlotIfRequested(absl::GetFlag(FLAGS_threads)));
  ASSIGN_OR_RETURN(const auto shards,
                   datasets::TokenShardSet::Open(absl::GetFlag(FLAGS_tokens)));
  const std::string path = absl::GetFlag(FLAGS_model);
  ASSIGN_OR_RETURN(const layers::LoadedModel loaded, layers::LoadModel(path));
  RETURN_IF_ERROR(datasets::CheckFitsModelVocabulary(
      *shards, loaded.model->options().vocab_size, path));
  ASSIGN_OR_RETURN(const auto initial, layers::InitializeModel(loaded.config));
  initial->eval();
  NeuronUsageOptions options;
  options.sequences = absl::GetFlag(FLAGS_sequences);
  options.sequence_length = absl::GetFlag(FLAGS_sequence_length);
  options.map_neurons = absl::GetFlag(FLAGS_map_neurons);
  const std::string name = absl::GetFlag(FLAGS_name);
  const int64_t seed = loaded.config.runtime().seed();
  NeuronUsageTables tables;
  RETURN_IF_ERROR(tables.AddModel(name, seed, *loaded.model, *shards, options));
  RETURN_IF_ERROR(
      tables.AddModel(name + "_init", seed, *initial, *shards, options));
  StagedOutputs outputs;  // Both tables or neither.
  RETURN_IF_ERROR(
      outputs.WriteFile(absl::GetFlag(FLAGS_usage_out), tables.usage()));
  RETURN_IF_ERROR(outputs.WriteFile(absl::GetFlag(FLAGS_coactivation_out),
                                    tables.coactivation()));
  return outputs.Commit();
}

}  // namespace
}  // namespace sparse_layers::analysis

int main(int argc, char** argv) {
  sparse_layers::InitMain(argc, argv,
                          "neuron_usage --model=M.pt --tokens=T "
                          "--usage_out=U.csv --coactivation_out=C.csv");
  return sparse_layers::RunMain(sparse_layers::analysis::Run);
}
