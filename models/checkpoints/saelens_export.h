// A fitted SAE as a SAELens SAE directory, the format SAELens's
// SAE.load_from_disk reads (SAELens 6.x; also what Neuronpedia and most
// published SAEs use): cfg.json and sae_weights.safetensors.
//
// Architectures: topk_sae "topk", relu_sae "standard", jump_relu_sae
// "jumprelu" and batch_topk_sae "jumprelu" with its inference threshold in
// every unit (SAELens saves its own BatchTopK SAEs that way).
// cfg.json: architecture, d_in, d_sae, k and rescale_acts_by_decoder_norm
// false (topk only), dtype "float32", device, apply_b_dec_to_input true (our
// SAE encodes y - output_bias), normalize_activations "none",
// reshape_activations "none", and metadata: sae_lens_version (without it
// SAELens reads the file as pre-6.0 and drops the metadata), hook_name in
// TransformerLens naming ("blocks.<L>.hook_mlp_out" / "hook_attn_out"),
// model_name, context_size and, beyond SAELens's fields, our hook name, layer
// type and the SHA-256 of the exported fit.
// sae_weights.safetensors: W_enc (d_in, d_sae) = encoder, b_enc (d_sae) =
// encoder_bias, W_dec (d_sae, d_in) = decoder, b_dec (d_in) = output_bias and,
// for jumprelu, threshold (d_sae) = exp(log_threshold) or BatchTopK's theta.
// SAELens's TopK takes the k largest pre-activations and then the ReLU; ours
// the ReLU then the k largest: the same codes (the kept values that are
// positive either way). Its JumpReLU is ReLU(h) 1[h > threshold], ours
// h 1[h > theta] with theta > 0: the same.
//
// Other fits have no SAELens architecture with the same forward (our
// transcoders are TopK, SAELens's are ReLU or JumpReLU; MxD and Lorsa): they
// keep the sparse_layers.fit.v1 safetensors of fit_export.h.
#ifndef SPARSE_LAYERS_MODELS_CHECKPOINTS_SAELENS_EXPORT_H_
#define SPARSE_LAYERS_MODELS_CHECKPOINTS_SAELENS_EXPORT_H_

#include <torch/torch.h>

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "models/model_loader.h"

namespace sparse_layers::layers {

// The SAELens version whose loader this format was checked against.
inline constexpr char kSaeLensVersion[] = "6.49.2";

struct SaeLensExport {
  std::string architecture;  // SAELens's name: "topk", "standard", "jumprelu"
  std::string cfg_json;
  std::map<std::string, torch::Tensor> tensors;
};
absl::StatusOr<SaeLensExport> DescribeSaeLens(const LoadedReplacement& fit);

// The SAE fit at `checkpoint_path` written as the SAELens directory
// `out_dir` (both files or neither); returns what was written.
absl::StatusOr<SaeLensExport> ExportSaeLens(const std::string& checkpoint_path,
                                            const std::string& out_dir);

}  // namespace sparse_layers::layers

#endif  // SPARSE_LAYERS_MODELS_CHECKPOINTS_SAELENS_EXPORT_H_
