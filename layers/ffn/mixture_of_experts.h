// Top-k mixtures of MLP experts: the Switch-style learned router (Fedus et
// al. 2022; top-2 of 8 as in MoE-X's baseline) and MoE-X's parameter-free
// sparsity-aware router (Yang et al. 2025, arXiv:2503.07639 Sec. 4.3), with the
// Switch load-balance loss, dropless expert dispatch, and the
// MoE-as-wide-sparse-MLP view every interpretability metric uses (Sec. 4.2,
// Eq. 2).
#ifndef SPARSE_LAYERS_LAYERS_FFN_MIXTURE_OF_EXPERTS_H_
#define SPARSE_LAYERS_LAYERS_FFN_MIXTURE_OF_EXPERTS_H_

#include <torch/torch.h>

#include "layers/ffn/dense_mlp.h"
#include "layers/ffn/feed_forward.h"

namespace sparse_layers::layers {

struct MixtureOptions {
  int64_t d_model = 0;
  int64_t d_ffn = 0;      // D, hidden width of one expert.
  int64_t n_experts = 0;  // M.
  int64_t top_k = 0;      // k.
  Activation activation = Activation::kGelu;
  enum class Router { kLearned, kSparsityAware } router = Router::kLearned;
  // MoE-X router: sigma_h as a standard deviation (the consistent reading of
  // Eqs. 4-6) or the variance as printed (arXiv:2503.07639 Sec. 4.3.2).
  bool router_sigma_is_variance = false;
  double load_balance_weight = 0.001;  // lambda (MoE-X Sec. 5.1).
  int64_t n_layers = 1;                // Output-projection init scale.
};

struct Routing {
  torch::Tensor weights;  // (N, k) softmax over the kept scores.
  torch::Tensor experts;  // (N, k) int64.
  torch::Tensor scores;   // (N, M) router scores (logits or s_j).
};

class MixtureOfExpertsImpl : public FeedForwardImpl {
 public:
  explicit MixtureOfExpertsImpl(const MixtureOptions& options);

  torch::Tensor Forward(const torch::Tensor& x,
                        const HookPoint& hidden) override;
  int64_t ForwardFlopsPerToken() const override;
  // lambda * M * sum_i f_i P_i of the last training forward (MoE-X App. F,
  // Eqs. 19-21).
  torch::Tensor AuxiliaryLoss() override { return load_balance_loss_; }

  // Router on flattened tokens x: (N, d).
  Routing Route(const torch::Tensor& x) const;
  // Pre-activations of every expert, h = W_enc x (+ b): (N, M, D). Exact l0
  // of each expert's activation for router analyses.
  torch::Tensor AllPreActivations(const torch::Tensor& x) const;
  // The gate-scaled concatenated hidden code z (N, M*D), block-sparse: the
  // features of the wide-sparse-MLP view.
  torch::Tensor WideCode(const torch::Tensor& x) const;
  // The mega-decoder (M*D, d): output = WideCode(x) @ WideDecoder().
  torch::Tensor WideDecoder() const;
  // Reference: every expert computed densely, then masked (tests only).
  torch::Tensor ForwardDense(const torch::Tensor& x) const;

  // Sparse upcycling (Komatsuzaki et al. 2023): every expert copies the dense
  // MLP, plus N(0, (noise_rel * std(W))^2) noise to break the symmetry the
  // parameter-free router would otherwise keep (our addition: MoE-X Sec. 5.1
  // upcycles without saying how).
  void UpcycleFrom(const DenseMlpImpl& dense, double noise_rel);

  const MixtureOptions& options() const { return options_; }
  torch::Tensor encoders;  // W_enc (M, D, d)
  torch::Tensor decoders;  // W_dec (M, D, d), row m of expert j writes d
  torch::Tensor router;    // W_g (M, d); learned router only

 private:
  torch::Tensor Activate(const torch::Tensor& h) const;
  MixtureOptions options_;
  torch::Tensor load_balance_loss_;
};

}  // namespace sparse_layers::layers

#endif  // SPARSE_LAYERS_LAYERS_FFN_MIXTURE_OF_EXPERTS_H_
