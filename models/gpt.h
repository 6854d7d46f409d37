// The GPT-style decoder every LM experiment starts from: token embedding,
// learned or rotary positions, pre-norm blocks (LayerNorm or RMSNorm), causal
// attention, a registry-named FFN, tied or untied unembedding, and hook points
// on every residual stream, attention and FFN activation.
#ifndef SPARSE_LAYERS_MODELS_GPT_H_
#define SPARSE_LAYERS_MODELS_GPT_H_

#include <torch/torch.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "config/experiment.pb.h"
#include "layers/attention/attention.h"
#include "layers/attention/lorsa.h"
#include "layers/ffn/feed_forward.h"
#include "ops/hooks/hook_point.h"

namespace sparse_layers::layers {

struct GptOptions {
  int64_t vocab_size = 0;
  int64_t context_length = 0;
  int64_t d_model = 0;
  int64_t n_layers = 0;
  int64_t n_heads = 0;
  std::string ffn = "gelu_mlp";
  int64_t d_ffn = 0;
  int64_t n_experts = 0;
  int64_t top_k = 0;
  int64_t d_key = 0;
  // A registry-named attention ("mha", "mohd", "lorsa"); inner width of the
  // MoHD attention (0: d_model).
  std::string attention = "mha";
  int64_t attention_inner = 0;
  // Lorsa with n_heads QK heads: OV heads H, active K, ReLU before top-K.
  int64_t lorsa_ov_heads = 0;
  int64_t lorsa_top_k = 0;
  bool lorsa_relu = true;
  // Paper-versus-code switches of the FFN and MoHD attention.
  LayerVariants variants;
  // A registry-named layer in place of block `layer`'s FFN, or after it
  // (on_output: an SAE on the FFN output); layer -1 means none. With
  // attention_site, "lorsa" replaces the attention (d_ffn OV heads, qk_heads
  // QK heads) and an on_output SAE reconstructs the attention output.
  struct Replacement {
    std::string ffn;
    int64_t layer = -1;
    int64_t d_ffn = 0;
    int64_t n_experts = 0;
    int64_t top_k = 0;
    bool on_output = false;
    bool attention_site = false;
    int64_t qk_heads = 0;
    int64_t qk_dim = 0;  // Lorsa D_QK (0: d_model / n_heads).
    config::FfnReplacement::QkInit qk_init = config::FfnReplacement::QK_RANDOM;
    int64_t rank = 0;  // CP-MoE decoder rank.
    config::FfnReplacement::Sparsity sparsity = config::FfnReplacement::TOPK;
    double sparsity_penalty = 0;
    double jump_relu_bandwidth = 0.001;
    double jump_relu_initial_threshold = 0.001;
  } replacement;
  bool rotary = false;
  bool qk_norm = false;
  bool rms_norm = false;
  bool tie_embeddings = true;
  // Token embedding and LM head width when above d_model (0: d_model), with
  // projections to and from d_model; needs untied embeddings.
  int64_t embedding_width = 0;

  // Options of pretrained architectures (models/checkpoints/hf_checkpoint.h);
  // off, they leave every other model as it was. Biases on the attention and
  // "gelu_mlp" projections (GPT-2, Radford et al. 2019; GPT-NeoX), GELU's tanh
  // approximation in "gelu_mlp" (GPT-2).
  bool bias = false;
  bool gelu_tanh = false;
  // Attention and FFN read the same block input and both add to the residual
  // (GPT-NeoX, Black et al. 2022, arXiv:2204.06745 Sec. 2.1).
  bool parallel_residual = false;
  // The norms' epsilon (0: 1e-5 for LayerNorm, 1e-6 for RMSNorm).
  double norm_eps = 0;
  // LayerNorms with a weight only (nanoGPT with bias=False, Karpathy 2022).
  bool layer_norm_without_bias = false;
  // Rotary: the leading head dimensions rotated (0: all), the base, Llama
  // 3.1's frequency rescaling (AttentionOptions).
  int64_t rotary_dims = 0;
  double rotary_base = 10000;
  RotaryScaling rotary_scaling;
  // Key/value heads of grouped-query attention (0: n_heads; Llama,
  // arXiv:2407.21783 Sec. 3.2).
  int64_t n_kv_heads = 0;
};

// Checks the config's model section and fills GptOptions.
absl::StatusOr<GptOptions> GptOptionsFromConfig(
    const config::ModelConfig& model);

// The inverse for the dense models pretrained checkpoints load into
// (import_pretrained): GptOptionsFromConfig of the result gives `options`
// back. Fails for options that have no config field (a replacement layer,
// MoHD or Lorsa attention, ...).
absl::StatusOr<config::ModelConfig> ModelConfigFromGptOptions(
    const GptOptions& options);

class BlockImpl : public torch::nn::Module {
 public:
  BlockImpl(const GptOptions& options, int index,
            std::shared_ptr<AttentionImpl> attention,
            std::shared_ptr<FeedForwardImpl> ffn);
  torch::Tensor forward(torch::Tensor residual);

  torch::nn::AnyModule attention_norm;
  std::shared_ptr<AttentionImpl> attention;
  // A layer fitted in place of the attention (a Lorsa at replacement site
  // attn); the attention then stays, unused, beside it.
  std::shared_ptr<AttentionImpl> attention_stand_in;
  torch::nn::AnyModule ffn_norm;
  std::shared_ptr<FeedForwardImpl> ffn;
  // An SAE reconstructing the FFN's output (replacement.on_output), or null.
  std::shared_ptr<FeedForwardImpl> output_sae;
  // An SAE reconstructing the attention output (attention-site on_output).
  std::shared_ptr<FeedForwardImpl> attention_sae;

  // With parallel_residual, resid_mid is the block input plus the attention
  // output, and the FFN reads the normalised block input, not resid_mid.
  HookPoint hook_resid_pre;
  HookPoint hook_attn_in;   // Normalised attention input.
  HookPoint hook_attn_out;  // Attention output (after the output projection).
  HookPoint hook_resid_mid;
  HookPoint hook_ffn_in;  // Normalised FFN input.
  HookPoint hook_ffn_hidden;
  HookPoint hook_ffn_out;
  HookPoint hook_sae_codes;  // The output (or attention) SAE's codes.
  HookPoint hook_resid_post;

 private:
  bool parallel_residual_ = false;
};
TORCH_MODULE(Block);

class GptImpl : public torch::nn::Module {
 public:
  // Fails (as a Status through Create) on an unknown FFN name.
  static absl::StatusOr<std::shared_ptr<GptImpl>> Create(
      const GptOptions& options);

  // The replacement layer of options().replacement (the block's FFN or its
  // output SAE), or null when there is none.
  std::shared_ptr<FeedForwardImpl> ReplacementLayer() const;
  // The Lorsa replacing block replacement.layer's attention, or null.
  Lorsa LorsaReplacement() const;

  // tokens: (B, T) int64 -> logits (B, T, vocab).
  torch::Tensor forward(const torch::Tensor& tokens);
  // Final-norm hidden states (B, T, d_model): forward() without unembedding.
  torch::Tensor Hidden(const torch::Tensor& tokens);
  // The unembedding matrix (vocab, d_model).
  torch::Tensor UnembeddingWeight() const;
  // Mean next-token cross-entropy plus the FFNs' auxiliary losses.
  torch::Tensor Loss(const torch::Tensor& tokens, const torch::Tensor& targets);
  // Mean next-token cross-entropy only (evaluation).
  torch::Tensor CrossEntropy(const torch::Tensor& tokens,
                             const torch::Tensor& targets);

  // Hook points by TransformerLens-style name: "hook_embed",
  // "blocks.<i>.hook_resid_pre", "blocks.<i>.attn.hook_in", ... (HookNames()).
  HookPoint* FindHook(const std::string& name);
  std::vector<std::string> HookNames() const;
  void ClearHooks();

  // The FFNs' training-step hooks (FeedForwardImpl::PrepareStep and
  // AdjustGradients), called by the trainer around every step.
  void PrepareStep();
  void AdjustGradients();

  int64_t ParameterCount() const;
  // Matrix-multiply FLOPs per token of a forward pass at length T, including
  // the unembedding (training costs 3x this).
  int64_t ForwardFlopsPerToken(int64_t sequence_length) const;
  // The same inside the blocks only (attention and FFN; no embedding or
  // unembedding): what the FLOP budget counts, as the sgatlin code does
  // (hyperlinear/training/flops.py).
  int64_t BlockFlopsPerToken(int64_t sequence_length) const;

  const GptOptions& options() const { return options_; }
  // The token embedding's and LM head's width: embedding_width or d_model.
  int64_t EmbeddingWidth() const {
    return options_.embedding_width > 0 ? options_.embedding_width
                                        : options_.d_model;
  }
  torch::nn::Embedding token_embedding{nullptr};
  torch::nn::Embedding position_embedding{nullptr};  // Learned positions only.
  // Wide embedding only: embedding_width -> d_model and back.
  torch::nn::Linear embedding_in{nullptr};
  torch::nn::Linear embedding_out{nullptr};
  std::vector<Block> blocks;
  torch::nn::AnyModule final_norm;
  torch::nn::Linear unembedding{nullptr};  // Untied only.
  HookPoint hook_embed;
  HookPoint hook_final;  // After the final norm.

 private:
  explicit GptImpl(const GptOptions& options);
  GptOptions options_;
  std::map<std::string, HookPoint*> hooks_;
};

}  // namespace sparse_layers::layers

#endif  // SPARSE_LAYERS_MODELS_GPT_H_
