// Every constraint an ExperimentConfig must meet before any work starts: value
// ranges (NaN and infinities rejected), enum values, and each check a
// layer constructor in layers/ would make, evaluated on the values the model
// builder derives (models/gpt.cc calls the same helpers), so
// check_config, train and every binary that loads a config agree. Layer names
// resolve through the shapes the linked layers registered (layer_shapes.h).
#ifndef SPARSE_LAYERS_CONFIG_CONFIG_VALIDATOR_H_
#define SPARSE_LAYERS_CONFIG_CONFIG_VALIDATOR_H_

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "config/experiment.pb.h"

namespace sparse_layers::config {

// Builds the error for the field at `path` (e.g. {"model", "n_heads"});
// config_loader adds the file:line:column where the field was written.
using FieldErrorFn = std::function<absl::Status(
    std::initializer_list<absl::string_view> path, absl::string_view message)>;

absl::Status ValidateExperimentConfig(const ExperimentConfig& config,
                                      const FieldErrorFn& error);

// The model section alone, with "field 'model.x': message" errors: for models
// built from configs assembled in code (GptOptionsFromConfig).
absl::Status ValidateModelConfig(const ModelConfig& model);

// model.ffn and model.attention with their defaults ("gelu_mlp", "mha").
std::string FfnName(const ModelConfig& model);
std::string AttentionName(const ModelConfig& model);

// model.d_ffn, or floor(ffn_alpha * d_model) with alpha 4 by default.
int64_t EffectiveFfnWidth(const ModelConfig& model);

// model.replacement's sizes with their defaults filled in (experiment.proto).
struct ReplacementSizes {
  int64_t d_ffn = 0;
  int64_t n_experts = 0;
  int64_t qk_heads = 0;
  int64_t qk_dim = 0;  // Lorsa D_QK.
  int64_t rank = 0;    // CP-MoE decoder rank R.
};
ReplacementSizes EffectiveReplacementSizes(const ModelConfig& model);

// The replacement's sparsity rule: fixed by the SAE names ("relu_sae" RELU_L1,
// "jump_relu_sae" JUMP_RELU, "batch_topk_sae" BATCH_TOPK, "topk_sae" TOPK),
// else its sparsity field.
FfnReplacement::Sparsity EffectiveSparsity(const FfnReplacement& replacement);

}  // namespace sparse_layers::config

#endif  // SPARSE_LAYERS_CONFIG_CONFIG_VALIDATOR_H_
