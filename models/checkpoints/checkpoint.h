// Training checkpoints: parameters, AdamW state, step, config, log and RNG
// state as one pickled dictionary (torch::pickle_save; Python's torch.load
// reads it too), written atomically. Keys are names and positions, never
// memory addresses, so the same training state is the same bytes.
#ifndef SPARSE_LAYERS_MODELS_CHECKPOINTS_CHECKPOINT_H_
#define SPARSE_LAYERS_MODELS_CHECKPOINTS_CHECKPOINT_H_

#include <torch/torch.h>

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace sparse_layers::layers {

struct CheckpointState {
  int64_t step = 0;  // Optimiser steps completed.
  std::string config_text;
  std::string log_csv;  // The CSV log up to `step`.
};

// One parameter's AdamW state, stored as
// optimizer.<group>.<index>.{step,exp_avg,exp_avg_sq}.
struct AdamWSlot {
  int64_t step = 0;  // 0: not stepped yet, nothing stored.
  torch::Tensor exp_avg;
  torch::Tensor exp_avg_sq;
};
// Per parameter group, per parameter, in the optimiser's order.
using AdamWState = std::vector<std::vector<AdamWSlot>>;

// Tensors may be views (of a flat optimiser's buffers): each is written alone.
absl::Status SaveCheckpoint(const std::string& path,
                            const torch::nn::Module& model,
                            const AdamWState* optimizer,
                            const CheckpointState& state);

// Restores parameters from `path`, and reads the optimiser state into
// `optimizer` when given (slots not stored keep step 0).
absl::StatusOr<CheckpointState> LoadCheckpoint(const std::string& path,
                                               torch::nn::Module& model,
                                               AdamWState* optimizer);

// The config stored in a checkpoint, without loading tensors into a model.
absl::StatusOr<std::string> ReadCheckpointConfig(const std::string& path);

}  // namespace sparse_layers::layers

#endif  // SPARSE_LAYERS_MODELS_CHECKPOINTS_CHECKPOINT_H_
