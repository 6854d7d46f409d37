// A SAELens SAE directory (cfg.json, sae_weights.safetensors; SAELens 6.x, as
// SAE.load_from_disk reads it) in, as an SAE fit on one of our base models, so
// that a published SAE is measured beside ours with the same metrics. Only
// what our SAEs compute exactly is accepted: architecture "topk" (SAELens's
// TopK then ReLU equals our ReLU then TopK) as topk_sae, "standard" as
// relu_sae and "jumprelu" as jump_relu_sae (log_threshold = log threshold,
// thresholds <= 0 raised to the smallest positive float: ReLU(h) 1[h > t]
// keeps h > max(t, 0)); normalize_activations and reshape_activations "none".
// Folded on import, as SAELens folds them itself: apply_b_dec_to_input false
// (b_enc += b_dec W_enc, since ours always encodes y - b_dec) and, for topk,
// rescale_acts_by_decoder_norm (W_enc, b_enc scaled by each decoder row's
// norm, W_dec rows divided by it). The hook (metadata.hook_name,
// TransformerLens naming) picks the block and site: blocks.<L>.hook_mlp_out
// (FFN output) or blocks.<L>.hook_attn_out.
#ifndef SPARSE_LAYERS_MODELS_CHECKPOINTS_SAELENS_IMPORT_H_
#define SPARSE_LAYERS_MODELS_CHECKPOINTS_SAELENS_IMPORT_H_

#include <torch/torch.h>

#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "config/experiment.pb.h"
#include "models/gpt.h"
#include "models/model_loader.h"

namespace sparse_layers::layers {

// A SAELens SAE as ours: its replacement spec and parameters (encoder,
// encoder_bias, decoder, output_bias and a JumpReLU's log_threshold;
// float32), after the folds.
struct SaeLensSae {
  config::FfnReplacement spec;
  std::map<std::string, torch::Tensor> parameters;
};
// Fails in one line naming the directory and the field or tensor.
absl::StatusOr<SaeLensSae> ReadSaeLens(const std::string& dir);

// `base` (a model without a replacement) with the replacement `spec` spliced
// in: every base parameter copied, the replacement's drawn from `seed`. Named
// `name`.
absl::StatusOr<std::shared_ptr<GptImpl>> WithReplacement(
    const LoadedModel& base, const config::FfnReplacement& spec,
    const std::string& name, config::ExperimentConfig& config);

// The SAELens SAE at `dir` on the base model at `base_checkpoint`, saved as a
// fit checkpoint at `out` (what //pipelines/train:fit writes).
absl::Status ImportSaeLens(const std::string& dir,
                           const std::string& base_checkpoint,
                           const std::string& out);

}  // namespace sparse_layers::layers

#endif  // SPARSE_LAYERS_MODELS_CHECKPOINTS_SAELENS_IMPORT_H_
