// expert_encoder_map: whether a mixture's experts own distinct regions of
// input space, in a trained model and in a random initialisation of its
// architecture (analysis/expert_geometry/expert_encoders.h; MoE-X
// arXiv:2503.07639 Fig. 6).
//
//   expert_encoder_map --checkpoint=moe_x_s1.pt --name=moe_x
//       --out=neighbours.csv --map_out=map.csv
//
// Rows name the model "<name>" and its initialisation "random_<name>" (the
// same config and seed's draws before training, as the chess study's random
// controls). The map is drawn at the block the chess claims read (MoE-X Sec.
// 3.1: layer 6 of 8), only when --map_out is given.
#include <string>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "analysis/bsp/bsp_evaluation.h"
#include "analysis/expert_geometry/expert_encoders.h"
#include "base/common/cpu_slots.h"
#include "base/common/output_paths.h"
#include "base/common/staged_outputs.h"
#include "base/common/status_macros.h"
#include "models/model_loader.h"
#include "ops/backend/torch_init.h"

ABSL_FLAG(std::string, checkpoint, "", "A trained mixture model (.pt)");
ABSL_FLAG(std::string, name, "", "The model's name in the tables");
ABSL_FLAG(std::string, out, "", "neighbours.csv to write");
ABSL_FLAG(std::string, map_out, "",
          "Optional map.csv: the t-SNE map of the headline block's rows");
ABSL_FLAG(int, rows_per_expert, 256,
          "Each expert's first encoder rows read (0: all)");
ABSL_FLAG(int, neighbours, 10, "Nearest rows per row");
ABSL_FLAG(int, map_rows_per_expert, 64,
          "Each expert's first rows the t-SNE map draws (0: all it read)");
ABSL_FLAG(double, perplexity, 30, "t-SNE perplexity");
ABSL_FLAG(int, iterations, 1000, "t-SNE iterations");

namespace sparse_layers::analysis {
namespace {

absl::Status Run() {
  RETURN_IF_ERROR(FirstError(
      {RequiredFile(FLAGS_checkpoint), RequiredFlag(FLAGS_name),
       RequiredFlag(FLAGS_out), FlagAtLeast(FLAGS_rows_per_expert, 0),
       FlagAtLeast(FLAGS_neighbours, 1), FlagAtLeast(FLAGS_iterations, 1),
       FlagAtLeast(FLAGS_map_rows_per_expert, 0),
       OutputIsNotAnInput("--out", absl::GetFlag(FLAGS_out),
                          {absl::GetFlag(FLAGS_checkpoint)}),
       OutputIsNotAnInput("--map_out", absl::GetFlag(FLAGS_map_out),
                          {absl::GetFlag(FLAGS_checkpoint)})}));
  RETURN_IF_ERROR(AcquireCpuSlotIfRequested(absl::GetFlag(FLAGS_threads)));
  ASSIGN_OR_RETURN(const layers::LoadedModel loaded,
                   layers::LoadModel(absl::GetFlag(FLAGS_checkpoint)));
  ASSIGN_OR_RETURN(const auto initial, layers::InitializeModel(loaded.config));
  ExpertEncoderOptions options;
  options.model_name = absl::GetFlag(FLAGS_name);
  options.seed = loaded.config.runtime().seed();
  options.rows_per_expert = absl::GetFlag(FLAGS_rows_per_expert);
  options.neighbours = absl::GetFlag(FLAGS_neighbours);
  options.headline_layer =
      HeadlineBlock(static_cast<int>(loaded.model->blocks.size()));
  options.map = !absl::GetFlag(FLAGS_map_out).empty();
  options.map_rows_per_expert = absl::GetFlag(FLAGS_map_rows_per_expert);
  options.tsne.perplexity = absl::GetFlag(FLAGS_perplexity);
  options.tsne.iterations = absl::GetFlag(FLAGS_iterations);
  options.tsne.seed = static_cast<uint64_t>(options.seed);
  ExpertEncoderTables tables;
  RETURN_IF_ERROR(tables.AddModel(*loaded.model, options));
  options.model_name = "random_" + options.model_name;
  RETURN_IF_ERROR(tables.AddModel(*initial, options));
  StagedOutputs outputs;  // Both tables or neither.
  RETURN_IF_ERROR(
      outputs.WriteFile(absl::GetFlag(FLAGS_out), tables.neighbours()));
  if (options.map) {
    RETURN_IF_ERROR(
        outputs.WriteFile(absl::GetFlag(FLAGS_map_out), tables.map()));
  }
  return outputs.Commit();
}

}  // namespace
}  // namespace sparse_layers::analysis

int main(int argc, char** argv) {
  sparse_layers::InitMain(argc, argv,
                          "expert_encoder_map --checkpoint=M.pt --name=N "
                          "--out=neighbours.csv [--map_out=map.csv]");
  return sparse_layers::RunMain(sparse_layers::analysis::Run);
}
