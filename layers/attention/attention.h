// The attention interface every attention family implements (causal
// multi-head attention, MoHD's routed sub-dimensions, Lorsa), and the registry
// that lets a config name one (model.attention: "mha", "mohd", "lorsa"), as
// layers/ffn/feed_forward.h does for FFNs.
#ifndef SPARSE_LAYERS_LAYERS_ATTENTION_ATTENTION_H_
#define SPARSE_LAYERS_LAYERS_ATTENTION_ATTENTION_H_

#include <torch/torch.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "config/layer_shapes.h"
#include "ops/core/layer_variants.h"
#include "ops/core/rotary.h"
#include "ops/hooks/hook_point.h"

namespace sparse_layers::layers {

struct AttentionOptions {
  int64_t d_model = 0;
  // Query/key heads, and their width (0: d_model / n_heads; a Lorsa replacing
  // an attention keeps the base head width, arXiv:2504.20938 Sec. 3.1).
  int64_t n_heads = 0;
  int64_t qk_dim = 0;
  int64_t context_length = 0;
  bool rotary = false;
  // Rotary options of pretrained models ("mha"): the leading head dimensions
  // rotated (0: all; GPT-NeoX rotates a quarter, Black et al. 2022,
  // arXiv:2204.06745), the frequency base, and Llama 3.1's rescaling.
  int64_t rotary_dims = 0;
  double rotary_base = 10000;
  RotaryScaling rotary_scaling;
  // Key/value heads of grouped-query attention ("mha"; 0: n_heads), as Llama
  // 2 and 3 use (arXiv:2407.21783 Sec. 3.2).
  int64_t n_kv_heads = 0;
  // Biases on the query/key/value and output projections ("mha"), as GPT-2
  // (Radford et al. 2019) and GPT-NeoX have; initialised to zero.
  bool bias = false;
  // RMSNorm of queries and keys per head ("mha").
  bool qk_norm = false;
  // Output projection init std is 0.02 / sqrt(2 * n_layers) (GPT-2 sec. 2.3).
  int64_t n_layers = 1;
  // MoHD: N sub-dimensions, K active ones (the model's n_experts and top_k,
  // shared with its FFN; arXiv:2412.05644 Sec. 4), the attention width (0:
  // d_model).
  int64_t n_experts = 0;
  int64_t top_k = 0;
  int64_t inner = 0;
  // Lorsa: H OV heads, K active ones, ReLU on z before the top-K
  // (arXiv:2504.20938 Sec. 3.1, App. B.4).
  int64_t ov_heads = 0;
  int64_t lorsa_top_k = 0;
  bool relu = true;
  LayerVariants variants;
  // Hook names start with this ("blocks.<i>.attn.").
  std::string hook_prefix;
};

class AttentionImpl : public torch::nn::Module {
 public:
  // x: (B, T, d_model), the normalised block input -> (B, T, d_model).
  virtual torch::Tensor forward(const torch::Tensor& x) = 0;
  // Matrix-multiply FLOPs per token at sequence length T.
  virtual int64_t ForwardFlopsPerToken(int64_t sequence_length) const = 0;
  // Regularisers added to the training loss (MoHD's balance loss); undefined
  // when none.
  virtual torch::Tensor AuxiliaryLoss() { return {}; }
  // Hook points inside the layer (e.g. the attention pattern).
  virtual std::vector<HookPoint*> HookPoints() { return {}; }
};

using AttentionFactory =
    std::function<std::shared_ptr<AttentionImpl>(const AttentionOptions&)>;

class AttentionRegistry {
 public:
  // Registers at static-initialisation time; see AttentionRegistration.
  static void Register(const std::string& name, AttentionFactory factory);
  static absl::StatusOr<std::shared_ptr<AttentionImpl>> Create(
      const std::string& name, const AttentionOptions& options);
  static std::vector<std::string> Names();
};

// `static AttentionRegistration kRegistration("name", shape, factory);` in a
// .cc linked with alwayslink = True: the factory, and the size constraints
// the config validator checks before the factory ever runs.
struct AttentionRegistration {
  AttentionRegistration(const std::string& name, config::AttentionShape shape,
                        AttentionFactory factory) {
    config::RegisterAttentionShape(name, shape);
    AttentionRegistry::Register(name, std::move(factory));
  }
};

}  // namespace sparse_layers::layers

#endif  // SPARSE_LAYERS_LAYERS_ATTENTION_ATTENTION_H_
