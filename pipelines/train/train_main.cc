// train: trains the language model of a config on token shards
// (train_command.cc has the flags).
#include "ops/backend/torch_init.h"
#include "pipelines/train/next_token_objective.h"
#include "pipelines/train/train_command.h"

int main(int argc, char** argv) {
  sparse_layers::InitMain(argc, argv, "Trains a language model from a config.");
  return sparse_layers::RunMain([] {
    return sparse_layers::train::RunTrainCommand(
        {"train", "tokens", sparse_layers::train::MakeNextTokenObjective,
         /*perplexity=*/true});
  });
}
