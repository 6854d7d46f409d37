// The trainer's command line (flags in train_command.cc), shared by the
// train and fit binaries, each linking its own objective.
#ifndef SPARSE_LAYERS_PIPELINES_TRAIN_TRAIN_COMMAND_H_
#define SPARSE_LAYERS_PIPELINES_TRAIN_TRAIN_COMMAND_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "pipelines/train/trainer.h"

namespace sparse_layers::train {

// One training binary: its name in messages, the unit its data counts, its
// objective, and whether its validation loss has a perplexity (a
// next-token cross-entropy does; a fit's normalised MSE does not).
struct TrainCommand {
  absl::string_view program;
  absl::string_view unit;
  ObjectiveFactory make_objective;
  bool perplexity = false;
};

// Trains the flags' config with `command.make_objective` and publishes the
// checkpoint, log and summary together.
absl::Status RunTrainCommand(const TrainCommand& command);

}  // namespace sparse_layers::train

#endif  // SPARSE_LAYERS_PIPELINES_TRAIN_TRAIN_COMMAND_H_
