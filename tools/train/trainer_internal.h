// Pieces shared by the trainer's two modes (language-model training in
// trainer.cc, replacement-layer fitting in replacement_fit.cc).
#ifndef SPARSE_LAYERS_TOOLS_TRAIN_TRAINER_INTERNAL_H_
#define SPARSE_LAYERS_TOOLS_TRAIN_TRAINER_INTERNAL_H_

#include <torch/torch.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "layers/models/checkpoint.h"
#include "tools/config/experiment.pb.h"
#include "tools/train/trainer.h"
#include "tools/train/training.pb.h"

namespace sparse_layers::train {

using Clock = std::chrono::steady_clock;

// "h:mm:ss".
std::string FormatDuration(double seconds);

// AdamW (Loshchilov & Hutter 2019); no weight decay on 1-D parameters (norm
// gains, biases), as in GPT-2 / nanoGPT.
std::unique_ptr<torch::optim::AdamW> MakeOptimizer(
    const std::vector<torch::Tensor>& parameters,
    const config::OptimizerConfig& config);

// Mean of the last 10% of the training losses (the summary's final loss).
double TailMean(const std::vector<double>& losses);

// The train_loss (LM) or train_nmse (fit) column of a CSV log: the log is in
// every checkpoint, so a resumed run averages the same steps as an
// uninterrupted one.
std::vector<double> LoggedTrainLosses(const std::string& log_csv);

// A finished run being resumed: its summary at options.summary_path when that
// records the checkpoint's digest, to be kept rather than rewritten with this
// process's near-zero wall time.
std::optional<TrainingSummary> KeptSummary(const TrainerOptions& options);

// Sets the scheduled learning rate of `step` on every parameter group and
// returns it.
double ScheduleLearningRate(const config::ExperimentConfig& config,
                            int64_t step, int64_t steps,
                            torch::optim::AdamW& optimizer);

// The summary fields both modes report. A step processes `units_per_step`
// tokens (LM) or activation rows (fits), each costing
// `forward_flops_per_unit`; wall time and throughput are this process's
// (from `first_step`); the final loss is the tail of `log_csv`'s losses;
// `train_manifest` is the serialised training-data manifest.
TrainingSummary RunSummary(const config::ExperimentConfig& config,
                           const std::string& config_text, int64_t steps,
                           int64_t first_step, int64_t units_per_step,
                           int64_t forward_flops_per_unit, double wall,
                           const std::string& stopped_by,
                           const std::string& log_csv,
                           const std::string& train_manifest);

// Fills the summary's provenance: trainer binary and parent digests, build
// identity lines.
absl::Status RecordProvenance(const TrainerOptions& options,
                              TrainingSummary& summary);

// Saves the final checkpoint (at options.final_checkpoint_path when set),
// records its digest in `summary`, and writes the
// CSV log and the summary where `options` asks.
absl::Status WriteRunOutputs(const TrainerOptions& options,
                             const torch::nn::Module& model,
                             torch::optim::AdamW* optimizer,
                             const layers::CheckpointState& state,
                             TrainingSummary& summary);

// The fitting mode: options.train_activations is set.
absl::StatusOr<TrainingSummary> FitReplacement(
    const config::ExperimentConfig& config, const TrainerOptions& options);

}  // namespace sparse_layers::train

#endif  // SPARSE_LAYERS_TOOLS_TRAIN_TRAINER_INTERNAL_H_
