// The trainer: config + token shards (the next-token objective) or an
// activation cache (a replacement objective) -> checkpoint, CSV log and
// summary, through the one loop of training_loop.h. Each objective is its own
// library and binary (train, fit), so a replacement layer's code never changes
// the LM trainer's identity and retrains no cached LM.
// Deterministic for a given config and thread count: data windows depend only
// on (seed, step), so a resumed run replays exactly what an uninterrupted one
// would have done.
#ifndef SPARSE_LAYERS_PIPELINES_TRAIN_TRAINER_H_
#define SPARSE_LAYERS_PIPELINES_TRAIN_TRAINER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "config/experiment.pb.h"
#include "models/gpt.h"
#include "pipelines/train/training.pb.h"

namespace sparse_layers::train {

struct TrainerOptions {
  // Token shard manifests; when empty, the config's data section is used.
  std::string train_manifest;
  std::string validation_manifest;
  // Outputs. Periodic checkpoints go to checkpoint_path (what --resume
  // reads); the final one to final_checkpoint_path when set, so that a caller
  // staging the outputs (train_main) keeps them all-or-nothing.
  std::string checkpoint_path;
  std::string final_checkpoint_path;
  std::string log_csv_path;
  std::string summary_path;
  // Where a finished run's summary was published, when summary_path is a
  // staged temporary: --resume of that run keeps it (default: summary_path).
  std::string published_summary_path;
  // Optional SentencePiece model: the summary then shows the sample as text.
  // Continue from checkpoint_path when it exists.
  bool resume = false;
  // Checkpoint of a parent run to start from (config.init; ignored when
  // resuming an existing checkpoint).
  std::string init_from;
  // Fitting mode: activation-cache manifests (pipelines/activations). Only
  // model.replacement's layer trains, on the cached (FFN input, FFN output)
  // pairs with the normalised MSE (MxD, arXiv:2505.21364 Sec. 3.1); every other
  // parameter comes from init_from, so the checkpoint is the base model with
  // the layer spliced in. data.batch_size counts activation rows.
  std::string train_activations;
  std::string validation_activations;
  double progress_every_seconds = 5;
  // Also checkpoint (to checkpoint_path) when this much wall time passed since
  // the last one (0: only every config.runtime.checkpoint_every_steps), so a
  // resumable action loses at most this much work to a kill. Not part of the
  // config: it changes no number the run produces.
  double checkpoint_every_seconds = 0;
  // Checkpoints kept along the way (model and log, no optimiser state): one
  // after step round(fraction * steps) of the budget, fraction in (0, 1), at
  // `path` (MoE-X, arXiv:2503.07639 Fig. 10: metrics over training).
  struct Snapshot {
    double fraction = 0;
    std::string path;
  };
  std::vector<Snapshot> snapshots;
  // @build_identity//:identity.txt, copied into the summary (its manifest).
  std::string build_identity_path;
};

// Steps the budget allows (the first limit reached wins) and which limit it is.
struct StepBudget {
  int64_t steps = 0;
  std::string stopped_by;
};
StepBudget ComputeStepBudget(const config::BudgetConfig& budget,
                             int64_t tokens_per_step,
                             int64_t forward_flops_per_token);

class TrainingObjective;  // training_loop.h

// Makes a run's objective on its model (MakeNextTokenObjective,
// MakeReplacementObjective).
using ObjectiveFactory =
    absl::FunctionRef<absl::StatusOr<std::unique_ptr<TrainingObjective>>(
        const config::ExperimentConfig&, const TrainerOptions&,
        layers::GptImpl&)>;

absl::StatusOr<TrainingSummary> Train(const config::ExperimentConfig& config,
                                      const TrainerOptions& options,
                                      ObjectiveFactory make_objective);

// Copies every parameter of `parent_checkpoint` whose name and shape match
// into `model`, and upcycles each mixture FFN whose parent FFN is a dense MLP
// (as MoE-X, arXiv:2503.07639 Sec. 5.1, upcycles from a dense model).
absl::Status InitializeFromCheckpoint(const std::string& parent_checkpoint,
                                      layers::GptImpl& model,
                                      double upcycle_noise);

}  // namespace sparse_layers::train

#endif  // SPARSE_LAYERS_PIPELINES_TRAIN_TRAINER_H_
