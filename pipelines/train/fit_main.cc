// fit: fits a config's model.replacement (a transcoder, SAE, MxD or Lorsa)
// on an activation cache of its base model (train_command.cc has the flags).
#include "ops/backend/torch_init.h"
#include "pipelines/train/replacement_objectives.h"
#include "pipelines/train/train_command.h"

int main(int argc, char** argv) {
  sparse_layers::InitMain(
      argc, argv,
      "Fits a replacement layer of a config on an activation cache.");
  return sparse_layers::RunMain([] {
    return sparse_layers::train::RunTrainCommand(
        {"fit", "rows", sparse_layers::train::MakeReplacementObjective,
         /*perplexity=*/false});
  });
}
