// Sparse replacement layers trained on cached activations to mimic a frozen
// layer (MxD, arXiv:2505.21364 Sec. 2): SAEs, Transcoder, Skip Transcoder
// and the Mixture of Decoders (MxD). Each splits into an encoder that picks
// sparse codes (by one of four sparsity rules) and a decoder, so a steering
// hook can edit the codes in between.
#ifndef SPARSE_LAYERS_LAYERS_REPLACEMENT_SPARSE_REPLACEMENT_H_
#define SPARSE_LAYERS_LAYERS_REPLACEMENT_SPARSE_REPLACEMENT_H_

#include <torch/torch.h>

#include "config/experiment.pb.h"
#include "layers/ffn/feed_forward.h"
#include "ops/core/topk.h"

namespace sparse_layers::layers {

struct ReplacementOptions {
  int64_t d_in = 0;
  int64_t d_out = 0;
  // Code width: SAE / Transcoder units, or the MxD hidden width H (= the base
  // MLP's width; MxD, arXiv:2505.21364 Sec. 2.2).
  int64_t d_ffn = 0;
  // MxD experts N (ignored by the others).
  int64_t n_experts = 0;
  int64_t top_k = 0;  // K, active units per token.
  // Unit-norm decoder rows, re-applied before every step (released code's
  // norm_dec, default on; off for the Skip Transcoder's zero decoder).
  bool normalise_decoder = true;
  // Random-K training (MxD, arXiv:2505.21364 App. C.2): K' uniform in
  // [K - K/2, K + K/2].
  bool random_k = false;
  // How codes are made sparse (config FfnReplacement.sparsity): TopK per row,
  // BatchTopK, ReLU + L1 or JumpReLU; top_k is K for the first two only.
  config::FfnReplacement::Sparsity sparsity = config::FfnReplacement::TOPK;
  // lambda of the L1 (RELU_L1) or L0 (JUMP_RELU) penalty.
  double sparsity_penalty = 0;
  // JumpReLU's rectangle-kernel width epsilon (arXiv:2407.14435 Sec. 4).
  double jump_relu_bandwidth = 0.001;
  // JumpReLU's threshold at initialisation (arXiv:2407.14435 Sec. 4: 0.001).
  double jump_relu_initial_threshold = 0.001;
};

// JumpReLU(z; theta) = z H(z - theta) (Rajamanoharan et al., arXiv:2407.14435
// Eq. 4) with the straight-through pseudo-derivative of Eq. 11 for theta:
// d/dtheta = -(theta / eps) K((z - theta) / eps), K the rectangle on
// (-1/2, 1/2); z's gradient is H(z - theta). z: (B, U), theta: (U).
torch::Tensor JumpRelu(const torch::Tensor& z, const torch::Tensor& theta,
                       double bandwidth);
// H(z - theta) with Eq. 12's pseudo-derivative d/dtheta = -(1 / eps)
// K((z - theta) / eps) and none for z: the L0 penalty's straight-through path.
torch::Tensor JumpStep(const torch::Tensor& z, const torch::Tensor& theta,
                       double bandwidth);

class SparseReplacementImpl : public FeedForwardImpl {
 public:
  explicit SparseReplacementImpl(const ReplacementOptions& options);

  // Unit pre-activations before ReLU and TopK, (B, units): the Transcoder /
  // SAE encoder or the MxD gate logits (what the paper probes, "all
  // pre-activation": MxD, arXiv:2505.21364 Sec. 3.2.1). Affine in x (the
  // encoder's input is x less a constant), so the pre-codes of a mean of rows
  // are the mean of their pre-codes: sparse probing pools before encoding.
  torch::Tensor PreCodes(const torch::Tensor& x);
  // The active codes (values and indices) for input x: (B, d_in).
  // TOPK: TopK(ReLU(.), k), selected on the dense pre-codes, differentiated
  // through the k selected ones only (the encoder's gradient reads k rows per
  // token, not the width). Where fewer than k pre-codes are positive, the
  // zero codes' indices may differ from ReluTopK's (ties at zero); the
  // values, output and gradients are ReluTopK(PreCodes(x), k)'s up to
  // rounding (SparseDot sums in another order than the dense product).
  // Other rules: DenseCodes(x)'s non-zero entries, each row padded with zero
  // codes to the batch's widest row (k unused; padding may repeat a unit, so
  // densify by adding). Below a support of 1/kListedShare of the units they
  // are computed and differentiated through the listed entries only, as
  // TOPK's (with gradients on, the list also holds JumpReLU's zero codes
  // within its kernel).
  TopKCodes Encode(const torch::Tensor& x, int64_t k);
  // The (B, units) codes of x under a rule other than TOPK, differentiable:
  // BATCH_TOPK keeps the k * B largest ReLU codes of the batch in training
  // (and updates its threshold), those above the threshold in evaluation;
  // RELU_L1 ReLU(p); JUMP_RELU JumpRelu(p, exp(log_threshold)). In training
  // it keeps the rule's penalty for AuxiliaryLoss.
  torch::Tensor DenseCodes(const torch::Tensor& x);
  // The last training forward's sparsity penalty (RELU_L1: lambda mean_b
  // sum_n a_bn |d_n|; JUMP_RELU: lambda mean_b sum_n H(p_bn - theta_n));
  // undefined for the other rules and in evaluation.
  torch::Tensor AuxiliaryLoss() override { return penalty_; }
  // Output from the selected codes (cost grows with k).
  virtual torch::Tensor DecodeSparse(const torch::Tensor& x,
                                     const TopKCodes& codes) = 0;
  // Output from a dense (B, units) code, used when a hook edits the codes.
  virtual torch::Tensor DecodeDense(const torch::Tensor& x,
                                    const torch::Tensor& codes) = 0;
  // Number of code units (SAE/TC width, MxD experts).
  virtual int64_t units() const = 0;

  // FeedForwardImpl: Encode then decode (DenseCodes then DecodeDense for the
  // rules other than TOPK); `hidden` sees the dense codes.
  torch::Tensor Forward(const torch::Tensor& x,
                        const HookPoint& hidden) override;

  // Sets the output bias to the empirical mean of the targets
  // (MxD, arXiv:2505.21364 Sec. 3.1).
  void InitOutputBias(const torch::Tensor& target_mean);
  // Before each optimiser step: decoder rows back to unit norm.
  void NormaliseDecoder();
  // After backward: remove each decoder row's gradient component along the row.
  void ProjectDecoderGradients();
  void PrepareStep() override { NormaliseDecoder(); }
  void AdjustGradients() override { ProjectDecoderGradients(); }

  // K used now: the configured K in eval mode; a random K' with random_k in
  // training mode, drawn from LibTorch's default generator (seeded by the
  // run's runtime.seed and saved in checkpoints, so a resumed fit draws the
  // uninterrupted one's K').
  int64_t EffectiveK();

  const ReplacementOptions& options() const { return options_; }
  torch::Tensor output_bias;
  // JUMP_RELU: log theta per unit, init log(0.001) (arXiv:2407.14435 App. I).
  torch::Tensor log_threshold;
  // BATCH_TOPK: the inference threshold, the running mean (weight 0.01 per
  // step, bias-corrected) of each training batch's smallest kept code
  // (arXiv:2412.06410 Sec. 3), kept as its weighted sum and weight.
  torch::Tensor threshold_sum, threshold_weight;

 protected:
  // PreCodes(x)[b, u] = input[b] . rows[u] + bias[u]: the encoder's input for
  // x, its rows (units, d_in) and biases (units).
  struct EncoderTerms {
    torch::Tensor input, rows, bias;
  };
  virtual EncoderTerms EncoderTermsOf(const torch::Tensor& x) = 0;
  // The rows kept at unit norm (TC/SAE decoder rows, MxD expert vectors c_n);
  // undefined when the layer has none.
  virtual torch::Tensor DecoderRows() { return {}; }
  // Units the decoder reads per token: K under TOPK, all of them otherwise
  // (DecodeDense reads every unit, also for BatchTopK at inference where
  // about K are non-zero), for ForwardFlopsPerToken.
  int64_t DecodedUnits() const;
  ReplacementOptions options_;

 private:
  // The rule's codes for x: listed (TopKCodes, the encoder and decoder read
  // only the listed units) when allow_listed and the widest row's support is
  // at most units / kListedShare, else dense (B, units). One is defined.
  struct RuleCodes {
    TopKCodes listed;
    torch::Tensor dense;
  };
  static constexpr int64_t kListedShare = 16;
  RuleCodes CodesOfRule(const torch::Tensor& x, bool allow_listed);
  // Which pre-codes the rule may make non-zero, or (differentiable) give a
  // gradient (bool, like pre); BATCH_TOPK in training also updates its
  // threshold here, once per forward.
  torch::Tensor RuleSupport(const torch::Tensor& pre, bool differentiable);
  // PreCodes(x) at the listed indices (B, k), through SparseDot.
  static torch::Tensor SelectedPreCodes(const EncoderTerms& e,
                                        const torch::Tensor& indices);
  // Each row's count of a (B, units) support (int64), and the widest, at
  // least 1.
  static torch::Tensor SupportCounts(const torch::Tensor& support);
  static int64_t ListedWidth(const torch::Tensor& counts);
  // Codes times their decoder rows' norms (RELU_L1's penalty weights): dense
  // codes when indices is undefined, else listed ones.
  torch::Tensor WeightedCodes(const torch::Tensor& codes,
                              const torch::Tensor& indices);
  // BATCH_TOPK's threshold now (0 before any training step).
  double BatchThreshold() const;
  // PreCodes from the encoder's terms: the one place of the formula.
  static torch::Tensor PreCodesOf(const EncoderTerms& e);
  torch::Tensor penalty_;
};

// Transcoder (Dunefsky et al. 2024): y = TopK(ReLU(x E + b_e), K) D + b_out.
class TranscoderImpl : public SparseReplacementImpl {
 public:
  TranscoderImpl(const ReplacementOptions& options, bool skip);
  torch::Tensor DecodeSparse(const torch::Tensor& x,
                             const TopKCodes& codes) override;
  torch::Tensor DecodeDense(const torch::Tensor& x,
                            const torch::Tensor& codes) override;
  int64_t units() const override { return options_.d_ffn; }
  int64_t ForwardFlopsPerToken() const override;

  torch::Tensor encoder;       // (d_in, width)
  torch::Tensor encoder_bias;  // (width)
  torch::Tensor decoder;       // (width, d_out), rows d_h
  torch::Tensor skip;          // (d_in, d_out), Skip Transcoder only

 protected:
  EncoderTerms EncoderTermsOf(const torch::Tensor& x) override {
    return {x, encoder.t(), encoder_bias};
  }
  torch::Tensor DecoderRows() override { return decoder; }
};

// SAE on a layer's output y: z = sigma((y - b_dec) W_enc + b_enc),
// y_hat = z W_dec + b_dec (as in the MxD authors' released
// sparse_autoencoder.py); b_dec is the output bias and sigma the sparsity
// rule: TopK ("topk_sae"), ReLU + L1 ("relu_sae"), JumpReLU
// ("jump_relu_sae") or BatchTopK ("batch_topk_sae").
class SaeImpl : public SparseReplacementImpl {
 public:
  explicit SaeImpl(const ReplacementOptions& options);
  torch::Tensor DecodeSparse(const torch::Tensor& y,
                             const TopKCodes& codes) override;
  torch::Tensor DecodeDense(const torch::Tensor& y,
                            const torch::Tensor& codes) override;
  int64_t units() const override { return options_.d_ffn; }
  int64_t ForwardFlopsPerToken() const override;

  torch::Tensor encoder;       // (d, width)
  torch::Tensor encoder_bias;  // (width)
  torch::Tensor decoder;       // (width, d)

 protected:
  EncoderTerms EncoderTermsOf(const torch::Tensor& y) override {
    return {y - output_bias, encoder.t(), encoder_bias};
  }
  torch::Tensor DecoderRows() override { return decoder; }
};

// Mixture of Decoders (Oldfield et al. 2025), factorised forward (Lemma 2,
// Eq. 5): y = (C^T a) o (D^T z) + b_out with z = phi(E^T x) dense,
// a = TopK(ReLU(G x + b_g), K) over N experts, W_n = D diag(c_n) (Lemma 1).
class MxdImpl : public SparseReplacementImpl {
 public:
  // kRelu: the ReLU-MLP encoder of the encoder ablation (App. B.6.2, Fig. 19).
  enum class Encoder { kGelu, kRelu, kSwiGlu };
  MxdImpl(const ReplacementOptions& options, Encoder encoder);
  torch::Tensor DecodeSparse(const torch::Tensor& x,
                             const TopKCodes& codes) override;
  torch::Tensor DecodeDense(const torch::Tensor& x,
                            const torch::Tensor& codes) override;
  int64_t units() const override { return options_.n_experts; }
  int64_t ForwardFlopsPerToken() const override;

  // z = phi(x E + b_e) (GELU or ReLU), or silu(x E + b_e) o (x E_glu + b_glu).
  torch::Tensor Hidden(const torch::Tensor& x) const;

  torch::Tensor encoder;       // E (d_in, H)
  torch::Tensor encoder_bias;  // (H)
  torch::Tensor glu;           // E_GLU (d_in, H), SwiGLU only
  torch::Tensor glu_bias;      // (H)
  torch::Tensor decoder;       // D (H, d_out), zero at init
  torch::Tensor experts;       // C stored as rows c_n: (N, d_out)
  torch::Tensor gate;          // G (N, d_in)
  torch::Tensor gate_bias;     // (N)

 protected:
  // Gate logits (ReLU then TopK follow, no softmax) on the raw layer input.
  EncoderTerms EncoderTermsOf(const torch::Tensor& x) override {
    return {x, gate, gate_bias};
  }
  torch::Tensor DecoderRows() override { return experts; }

 private:
  Encoder encoder_kind_;
};

// Low-rank CP-muMoE baseline (MxD, arXiv:2505.21364 App. B.4.1, Eq. 22): the
// MxD encoder and gate with a rank-R CP decoder,
// y = U3^T [(U1^T a) o (U2^T z)] + b_out, so W_n = U2 diag(U1[n]) U3 has rank
// at most R.
class CpMoeImpl : public SparseReplacementImpl {
 public:
  CpMoeImpl(const ReplacementOptions& options, int64_t rank);
  torch::Tensor DecodeSparse(const torch::Tensor& x,
                             const TopKCodes& codes) override;
  torch::Tensor DecodeDense(const torch::Tensor& x,
                            const torch::Tensor& codes) override;
  int64_t units() const override { return options_.n_experts; }
  int64_t ForwardFlopsPerToken() const override;

  torch::Tensor encoder, encoder_bias;  // E (d_in, H), b_e
  torch::Tensor gate, gate_bias;        // G (N, d_in), b_g
  torch::Tensor u1;                     // (N, R)
  torch::Tensor u2;                     // (H, R)
  torch::Tensor u3;                     // (R, d_out), zero at init

 protected:
  EncoderTerms EncoderTermsOf(const torch::Tensor& x) override {
    return {x, gate, gate_bias};
  }

 private:
  int64_t rank_;
};

}  // namespace sparse_layers::layers

#endif  // SPARSE_LAYERS_LAYERS_REPLACEMENT_SPARSE_REPLACEMENT_H_
