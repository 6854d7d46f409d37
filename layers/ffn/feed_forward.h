// The feed-forward interface every FFN family implements (dense MLPs, GLUs and,
// in later layers, the sparse mixtures), and the registry that lets a config
// name one ("gelu_mlp", "swiglu", ...).
#ifndef SPARSE_LAYERS_LAYERS_FFN_FEED_FORWARD_H_
#define SPARSE_LAYERS_LAYERS_FFN_FEED_FORWARD_H_

#include <torch/torch.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "layers/hooks/hook_point.h"

namespace sparse_layers::layers {

// Switches between a paper's text and its official code, and the papers'
// ablations (config model.layer_options; experiment.proto gives each default).
struct LayerVariants {
  // Unit-norm decoder rows re-applied every step (norm_dec in the MxD authors'
  // released code); unset: each layer's default (on, off for the Skip
  // Transcoder's zero decoder).
  std::optional<bool> normalise_decoder;
  // Random-K training of replacement layers (MxD, arXiv:2505.21364 App. C.2).
  bool random_k = false;
  // MoE-X router sigma_h read as the variance printed in arXiv:2503.07639
  // Sec. 4.3.2 (default: the standard deviation).
  bool router_sigma_is_variance = false;
  double load_balance_weight = 0.001;  // Switch / MoE lambda.
  // MoHD: scaling "renorm" | "const_n" | "literal" | "none", group fusion,
  // random routing, shared sub-dims (-1: K - 1), beta, gather-sparse compute.
  std::string mohd_scaling = "renorm";
  bool mohd_fusion = true;
  bool mohd_random_routing = false;
  int64_t mohd_shared = -1;
  double mohd_balance_weight = 0.01;
  bool gather_sparse = false;
};

struct FeedForwardOptions {
  int64_t d_model = 0;
  // Hidden width (dense) or per-expert width (mixtures).
  int64_t d_hidden = 0;
  int64_t n_experts = 0;
  int64_t top_k = 0;
  // Query/key width of product-key routers; 0 means 128.
  int64_t d_key = 0;
  // Output projection init std is 0.02 / sqrt(2 * n_layers) (GPT-2 sec. 2.3).
  int64_t n_layers = 1;
  LayerVariants variants;
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

// `static FeedForwardRegistration kRegistration("name", factory);` in a .cc
// linked with alwayslink = True.
struct FeedForwardRegistration {
  FeedForwardRegistration(const std::string& name, FeedForwardFactory factory) {
    FeedForwardRegistry::Register(name, std::move(factory));
  }
};

}  // namespace sparse_layers::layers

#endif  // SPARSE_LAYERS_LAYERS_FFN_FEED_FORWARD_H_
