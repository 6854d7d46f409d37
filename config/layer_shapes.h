// How each registered layer family reads the model section's sizes, declared
// by the layer itself where it registers (layers/ffn/feed_forward.h,
// layers/attention/attention.h), so the validator checks a new layer without
// a list of its own. Torch-free: the catalog is names and shapes only.
#ifndef SPARSE_LAYERS_CONFIG_LAYER_SHAPES_H_
#define SPARSE_LAYERS_CONFIG_LAYER_SHAPES_H_

#include <optional>
#include <string>
#include <vector>

namespace sparse_layers::config {

// The constraints an FFN's constructor puts on model.{d_ffn, n_experts,
// top_k} (or model.replacement's).
enum class FfnShape {
  kDense,       // d_ffn > 0 only.
  kMixture,     // 0 < top_k <= n_experts.
  kProductKey,  // d_ffn = n^2, top_k < n; n_experts = channels.
  kMohd,        // N | d_model, S <= K <= N.
  kTopK,        // 0 < top_k <= d_ffn; a replacement layer.
  kMxd,         // kTopK and n_experts > 0; a replacement layer.
};

// The constraints an attention puts on the model: heads split d_model
// (kMultiHead), MoHD's sub-dimensions and inner width, Lorsa's OV heads.
enum class AttentionShape { kMultiHead, kMohd, kLorsa };

void RegisterFfnShape(const std::string& name, FfnShape shape);
void RegisterAttentionShape(const std::string& name, AttentionShape shape);

// nullopt when no linked layer registered `name`.
std::optional<FfnShape> FindFfnShape(const std::string& name);
std::optional<AttentionShape> FindAttentionShape(const std::string& name);

// Registered names in sorted order, optionally only those of one shape.
std::vector<std::string> FfnNames(std::optional<FfnShape> shape = {});
std::vector<std::string> AttentionNames(
    std::optional<AttentionShape> shape = {});

}  // namespace sparse_layers::config

#endif  // SPARSE_LAYERS_CONFIG_LAYER_SHAPES_H_
