// Low-Rank Sparse Attention (Lorsa; arXiv:2504.20938 Sec. 3.1, Algorithm 1):
// thousands of attention heads with rank-1 OV circuits (w_v, w_o), consecutive
// groups of G sharing one full-rank QK circuit, and only the top-K heads per
// token contributing.
// Trained to predict an attention layer's output from its input.
#ifndef SPARSE_LAYERS_LAYERS_ATTENTION_LORSA_H_
#define SPARSE_LAYERS_LAYERS_ATTENTION_LORSA_H_

#include <torch/torch.h>

#include <utility>

#include "layers/attention/attention.h"
#include "layers/attention/causal_attention.h"
#include "ops/core/causal_mask.h"
#include "ops/core/rotary.h"
#include "ops/core/topk.h"

namespace sparse_layers::layers {

struct LorsaOptions {
  int64_t d_model = 0;
  int64_t qk_heads = 0;  // H_QK.
  int64_t qk_dim = 0;    // D_QK (= the base model's head dim).
  int64_t ov_heads = 0;  // H = H_QK * G.
  int64_t top_k = 0;     // K, active heads per token.
  int64_t context_length = 0;
  // The base model's rotary positions (App. A): the leading rotary_dims of
  // each QK head (0: all; Pythia turns a quarter), base and scaling
  // (Llama 3.1).
  bool rotary = true;
  int64_t rotary_dims = 0;
  double rotary_base = 10000;
  RotaryScaling rotary_scaling;
  // ReLU on z before selection (App. B.4); off ranks by |z| and keeps z.
  bool relu = true;
};

struct LorsaOutput {
  torch::Tensor output;  // (B, T, d)
  torch::Tensor
      activations;        // (B, T, H): z at the K selected heads, 0 elsewhere.
  torch::Tensor pattern;  // (B, H_QK, T, T) attention of each QK group.
  torch::Tensor values;   // (B, T, H) v = x w_v + b_v.
};

// Registered as attention "lorsa" (a model whose attention is a Lorsa).
class LorsaImpl : public AttentionImpl {
 public:
  explicit LorsaImpl(const LorsaOptions& options);

  // x: (B, T, d), the attention layer's (normalised) input. With the dense
  // attention pattern and codes, for analyses; forward's reference.
  LorsaOutput Run(const torch::Tensor& x, int64_t k) const;
  // Run(x, top_k).output through the block-causal attention kernel (what
  // training and splicing call).
  torch::Tensor forward(const torch::Tensor& x) override;

  // QK group of OV head h: floor(h / G) (consecutive blocks, as in the code).
  int64_t GroupOf(int64_t head) const { return head / group_size(); }
  int64_t group_size() const { return options_.ov_heads / options_.qk_heads; }

  // Option 2 of App. B.3: Lorsa QK head g copies MHSA head floor(g / r),
  // r = H_QK / H_MHSA.
  void InitQkFromAttention(const CausalSelfAttentionImpl& attention);
  // Every weight from an MHSA layer with H_QK = H_MHSA and G = d_head: at K = H
  // (and relu off) Lorsa then computes that layer exactly: a QK-sharing group
  // is an MHSA head without the sparsity (arXiv:2504.20938 Sec. 3.1).
  void CopyFromAttention(const CausalSelfAttentionImpl& attention);
  // Footnote 1: w_v <- w_v ||w_o||, b_v <- b_v ||w_o||, w_o <- w_o / ||w_o||.
  void FoldOutputNorms();
  // Trained on normalised activations (x s_in -> y s_out, as the Lorsa authors'
  // released code does; the paper is silent), becomes the same layer on raw
  // ones: w_q, w_k, w_v times s_in; w_o, b_o over s_out (the top-K ranking
  // scales uniformly, so it is unchanged).
  void FoldInputOutputScales(double input_scale, double output_scale);

  // Attention-side FLOPs per token at length T: QK projections, scores,
  // value projection, mixing of H values, output of the K active heads.
  int64_t ForwardFlopsPerToken(int64_t sequence_length) const override;

  const LorsaOptions& options() const { return options_; }
  // Decode through a dense (B, T, H) matmul instead of the K selected rows
  // (reference for tests and benchmarks).
  bool dense_output = false;
  torch::Tensor w_q, w_k;  // (H_QK, d, D_QK)
  torch::Tensor b_q, b_k;  // (H_QK, D_QK)
  torch::Tensor w_v;       // (H, d)
  torch::Tensor b_v;       // (H)
  torch::Tensor w_o;       // (H, d)
  torch::Tensor b_o;       // (d)

 private:
  // Rotary queries and keys of every QK group, (B, H_QK, T, D_QK).
  std::pair<torch::Tensor, torch::Tensor> QueriesAndKeys(
      const torch::Tensor& x) const;
  // Values (B, T, H) as (B, H_QK, T, G): each group's OV heads side by side.
  torch::Tensor GroupedValues(const torch::Tensor& values) const;
  // The top-k heads of the mixed values (B, H_QK, T, G) and the output they
  // write, b_o included.
  std::pair<TopKCodes, torch::Tensor> SelectAndWrite(
      const torch::Tensor& grouped_z, int64_t k) const;

  LorsaOptions options_;
  RotaryEmbedding rotary_;
  CausalMask causal_mask_;
};
TORCH_MODULE(Lorsa);

}  // namespace sparse_layers::layers

#endif  // SPARSE_LAYERS_LAYERS_ATTENTION_LORSA_H_
