// Fitted sparse layers out to Python: one fit's parameters as a safetensors
// file that SAELens, PyTorch or numpy read without this project.
//
// Name scheme (format "sparse_layers.fit.v1"): every parameter of the fitted
// layer under its LibTorch name, with its LibTorch shape; x and y are rows:
//   Transcoder (Dunefsky et al. 2024): y = TopK(ReLU(x encoder + encoder_bias))
//     decoder + output_bias [+ x skip, Skip Transcoder]; encoder (d_in, units),
//     decoder (units, d_out).
//   TopK SAE on y: z = TopK(ReLU((y - output_bias) encoder + encoder_bias)),
//     y_hat = z decoder + output_bias.
//   MxD (arXiv:2505.21364 Sec. 2): gate (n_experts, d_in), gate_bias,
//     experts (n_experts, d_out), encoder (d_in, d_ffn), encoder_bias,
//     decoder (d_ffn, d_out), output_bias [glu, glu_bias: the SwiGLU form].
//   Lorsa (arXiv:2504.20938 Sec. 3.1): w_q, w_k (qk_heads, d_model, qk_dim),
//     b_q, b_k, w_v (ov_heads, d_model), b_v, w_o (ov_heads, d_model), b_o.
// __metadata__ (all strings): format, layer_type (the registry name, e.g.
// "mxd_gelu", "topk_sae", "lorsa"), block, site ("ffn", "ffn_output",
// "attn", "attn_output": what the layer replaces or reconstructs), hook_in,
// hook_out, d_model, top_k, replacement (the config's model.replacement as
// JSON), fit_sha256 (the checkpoint exported).
#ifndef SPARSE_LAYERS_MODELS_CHECKPOINTS_FIT_EXPORT_H_
#define SPARSE_LAYERS_MODELS_CHECKPOINTS_FIT_EXPORT_H_

#include <torch/torch.h>

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "models/model_loader.h"

namespace sparse_layers::layers {

inline constexpr char kFitExportFormat[] = "sparse_layers.fit.v1";

// The tensors and metadata ExportFit writes.
struct FitExport {
  std::map<std::string, torch::Tensor> tensors;
  std::map<std::string, std::string> metadata;
};
absl::StatusOr<FitExport> DescribeFit(const LoadedReplacement& fit);

// The fit at `checkpoint_path` (a sparse layer at any site, or a Lorsa)
// written to `out_path` (atomically); returns what was written.
absl::StatusOr<FitExport> ExportFit(const std::string& checkpoint_path,
                                    const std::string& out_path);

}  // namespace sparse_layers::layers

#endif  // SPARSE_LAYERS_MODELS_CHECKPOINTS_FIT_EXPORT_H_
