// The trainer's command line (flags in train_command.cc), shared by the
// train and fit binaries, each linking its own objective.
#ifndef SPARSE_LAYERS_TOOLS_TRAIN_TRAIN_COMMAND_H_
#define SPARSE_LAYERS_TOOLS_TRAIN_TRAIN_COMMAND_H_

#include "absl/status/status.h"
#include "tools/train/trainer.h"

namespace sparse_layers::train {

// Trains the flags' config with `make_objective` and publishes the
// checkpoint, log and summary together.
absl::Status RunTrainCommand(ObjectiveFactory make_objective);

}  // namespace sparse_layers::train

#endif  // SPARSE_LAYERS_TOOLS_TRAIN_TRAIN_COMMAND_H_
