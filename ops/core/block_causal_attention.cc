#include "ops/core/block_causal_attention.h"

#include <ATen/record_function.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/backend/batched_gemm.h"
#include "ops/core/causal_mask.h"

namespace sparse_layers::layers {
namespace {

class BlockCausalAttentionFunction
    : public torch::autograd::Function<BlockCausalAttentionFunction> {
 public:
  // q, k (N, T, Dh), v (N, T, Dv), contiguous; keep_patterns: a backward will
  // follow (decided by the caller: forward runs with GradMode off).
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx,
                               const torch::Tensor& q, const torch::Tensor& k,
                               const torch::Tensor& v, int64_t block_tokens,
                               bool keep_patterns) {
    // A named range: op profiles see the forward, which is no ATen op.
    RECORD_FUNCTION("BlockCausalAttention", std::vector<c10::IValue>());
    const int64_t length = q.size(1);
    const int64_t block = std::min(block_tokens, length);
    // In double (BatchedGemm rounds it to the operands' type): a float scale
    // put 3e-8 relative error into double-precision checks.
    const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(2)));
    // -inf strictly above the diagonal of a (block, block) tile.
    const torch::Tensor tile_mask =
        torch::full({block, block}, -std::numeric_limits<float>::infinity(),
                    q.options())
            .triu(1);
    torch::Tensor output =
        torch::empty({q.size(0), length, v.size(2)}, q.options());
    torch::autograd::variable_list saved = {q, k, v};
    for (int64_t start = 0; start < length; start += block) {
      const int64_t rows = std::min(block, length - start);
      const int64_t end = start + rows;
      torch::Tensor scores = torch::empty({q.size(0), rows, end}, q.options());
      BatchedGemm(q.narrow(1, start, rows), k.narrow(1, 0, end).transpose(1, 2),
                  scale, 0.0f, scores);
      // Only the last rows x rows tile reaches past the diagonal.
      scores.narrow(2, start, rows)
          .add_(tile_mask.narrow(0, 0, rows).narrow(1, 0, rows));
      torch::Tensor pattern = torch::softmax(scores, -1);
      BatchedGemm(pattern, v.narrow(1, 0, end), 1.0f, 0.0f,
                  output.narrow(1, start, rows));
      // Without a backward each block's pattern is freed with its block.
      if (keep_patterns) saved.push_back(pattern);
    }
    ctx->save_for_backward(saved);
    ctx->saved_data["block"] = block;
    return output;
  }

  static torch::autograd::variable_list backward(
      torch::autograd::AutogradContext* ctx,
      torch::autograd::variable_list grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor& q = saved[0];
    const torch::Tensor& k = saved[1];
    const torch::Tensor& v = saved[2];
    const int64_t block = ctx->saved_data["block"].toInt();
    const int64_t length = q.size(1);
    const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(2)));
    const torch::Tensor grad_output = grad_outputs[0].contiguous();
    torch::Tensor grad_q = torch::empty_like(q);
    torch::Tensor grad_k = torch::zeros_like(k);
    torch::Tensor grad_v = torch::zeros_like(v);
    for (int64_t start = 0, b = 0; start < length; start += block, ++b) {
      const int64_t rows = std::min(block, length - start);
      const int64_t end = start + rows;
      const torch::Tensor& pattern = saved[3 + b];
      const torch::Tensor d_out = grad_output.narrow(1, start, rows);
      BatchedGemm(pattern.transpose(1, 2), d_out, 1.0f, 1.0f,
                  grad_v.narrow(1, 0, end));
      torch::Tensor d_pattern =
          torch::empty({q.size(0), rows, end}, q.options());
      BatchedGemm(d_out, v.narrow(1, 0, end).transpose(1, 2), 1.0f, 0.0f,
                  d_pattern);
      // Softmax backward, P * (dP - rowsum(P * dP)), in one ATen kernel; the
      // 1/sqrt(Dh) goes into the two products below.
      const torch::Tensor d_scores =
          at::_softmax_backward_data(d_pattern, pattern, -1, torch::kFloat);
      BatchedGemm(d_scores, k.narrow(1, 0, end), scale, 0.0f,
                  grad_q.narrow(1, start, rows));
      BatchedGemm(d_scores.transpose(1, 2), q.narrow(1, start, rows), scale,
                  1.0f, grad_k.narrow(1, 0, end));
    }
    return {grad_q, grad_k, grad_v, torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor BlockCausalAttention(const torch::Tensor& q,
                                   const torch::Tensor& k,
                                   const torch::Tensor& v,
                                   int64_t block_tokens) {
  TORCH_CHECK(
      q.dim() >= 2 && q.sizes() == k.sizes() &&
          v.sizes().slice(0, v.dim() - 1) == q.sizes().slice(0, q.dim() - 1),
      "BlockCausalAttention: q, k (..., T, Dh) of one shape, v (..., "
      "T, Dv)");
  TORCH_CHECK(block_tokens >= 1, "BlockCausalAttention: block_tokens >= 1");
  const int64_t length = q.size(-2);
  // Leading dimensions flattened outside the Function: autograd reshapes back.
  const auto flat = [&](const torch::Tensor& x) {
    return x.reshape({-1, length, x.size(-1)}).contiguous();
  };
  const bool keep_patterns =
      torch::GradMode::is_enabled() &&
      (q.requires_grad() || k.requires_grad() || v.requires_grad());
  std::vector<int64_t> shape = v.sizes().vec();
  return BlockCausalAttentionFunction::apply(flat(q), flat(k), flat(v),
                                             block_tokens, keep_patterns)
      .view(shape);
}

torch::Tensor DenseCausalAttention(const torch::Tensor& q,
                                   const torch::Tensor& k,
                                   const torch::Tensor& v) {
  const torch::Tensor scores =
      torch::matmul(q, k.transpose(-2, -1)) *
      (1.0 / std::sqrt(static_cast<double>(q.size(-1))));
  return torch::matmul(CausalMask(q.size(-2)).Softmax(scores), v);
}

}  // namespace sparse_layers::layers
