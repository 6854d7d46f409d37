// The feed-forward interface every FFN family implements (dense MLPs, GLUs and,
// in later layers, the sparse mixtures), and the registry that lets a config
// name one ("gelu_mlp", "swiglu", ...).
#ifndef SPARSE_LAYERS_LAYERS_FFN_FEED_FORWARD_H_
#define SPARSE_LAYERS_LAYERS_FFN_FEED_FORWARD_H_

#include <torch/torch.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "config/layer_shapes.h"
#include "ops/core/layer_variants.h"
#include "ops/hooks/hook_point.h"

namespace sparse_layers::layers {

struct FeedForwardOptions {
  int64_t d_model = 0;
  // Hidden width (dense) or per-expert width (mixtures).
  int64_t d_ffn = 0;
  int64_t n_experts = 0;
  int64_t top_k = 0;
  // Query/key width of product-key routers; 0 means 128.
  int64_t d_key = 0;
  // Decoder rank of the low-rank CP-MoE replacement (0: full rank).
  int64_t rank = 0;
  // Replacement layers: how codes are made sparse, its penalty lambda and
  // JumpReLU's bandwidth and initial threshold (config FfnReplacement).
  config::FfnReplacement::Sparsity sparsity = config::FfnReplacement::TOPK;
  double sparsity_penalty = 0;
  double jump_relu_bandwidth = 0.001;
  double jump_relu_initial_threshold = 0.001;
  // Output projection init std is 0.02 / sqrt(2 * n_layers) (GPT-2 sec. 2.3).
  int64_t n_layers = 1;
  // Options of pretrained dense MLPs ("gelu_mlp"): biases on both matrices,
  // initialised to zero (GPT-2, Radford et al. 2019; GPT-NeoX), and GELU's
  // tanh approximation (GPT-2's "gelu_new") instead of the exact erf form.
  bool bias = false;
  bool gelu_tanh = false;
  LayerVariants variants;
  // Names of the layer's own hook points start with this ("blocks.<i>.ffn.").
  std::string hook_prefix;
};

class FeedForwardImpl : public torch::nn::Module {
 public:
  // x: (..., d_model). `hidden` sees the post-activation hidden units.
  virtual torch::Tensor Forward(const torch::Tensor& x,
                                const HookPoint& hidden) = 0;
  // Matrix-multiply FLOPs of one token's forward pass.
  virtual int64_t ForwardFlopsPerToken() const = 0;
  // Regularisers the layer adds to the training loss (load balance); undefined
  // when none.
  virtual torch::Tensor AuxiliaryLoss() { return {}; }
  // Training-step hooks: before the forward pass (e.g. re-normalising decoder
  // rows) and between backward and the optimiser step (e.g. projecting their
  // gradients).
  virtual void PrepareStep() {}
  virtual void AdjustGradients() {}
  // Hook points inside the layer beyond `hidden` (e.g. a router's choices).
  virtual std::vector<HookPoint*> HookPoints() { return {}; }
};

using FeedForwardFactory =
    std::function<std::shared_ptr<FeedForwardImpl>(const FeedForwardOptions&)>;

class FeedForwardRegistry {
 public:
  // Registers at static-initialisation time; see FeedForwardRegistration.
  static void Register(const std::string& name, FeedForwardFactory factory);
  static absl::StatusOr<std::shared_ptr<FeedForwardImpl>> Create(
      const std::string& name, const FeedForwardOptions& options);
  static std::vector<std::string> Names();
};

// `static FeedForwardRegistration kRegistration("name", shape, factory);` in
// a .cc linked with alwayslink = True: the factory, and the size constraints
// the config validator checks before the factory ever runs.
struct FeedForwardRegistration {
  FeedForwardRegistration(const std::string& name, config::FfnShape shape,
                          FeedForwardFactory factory) {
    config::RegisterFfnShape(name, shape);
    FeedForwardRegistry::Register(name, std::move(factory));
  }
};

}  // namespace sparse_layers::layers

#endif  // SPARSE_LAYERS_LAYERS_FFN_FEED_FORWARD_H_
