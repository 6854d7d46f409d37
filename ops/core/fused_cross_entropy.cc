#include "ops/core/fused_cross_entropy.h"

#include <ATen/record_function.h>

#include <algorithm>

namespace sparse_layers::layers {
namespace {

class FusedCrossEntropyFunction
    : public torch::autograd::Function<FusedCrossEntropyFunction> {
 public:
  // hidden (N, d), weight (V, d), targets (N), all contiguous. With
  // `gradients`, dL/dh and dL/dW (for dL_out = 1) are formed chunk by chunk
  // from the same logits, so no matmul is repeated in the backward.
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx,
                               const torch::Tensor& hidden,
                               const torch::Tensor& weight,
                               const torch::Tensor& targets,
                               int64_t chunk_tokens, bool gradients) {
    // A named range: op profiles see the forward, which is no ATen op.
    RECORD_FUNCTION("FusedCrossEntropy", std::vector<c10::IValue>());
    const int64_t n = hidden.size(0), vocab = weight.size(0);
    const int64_t chunk = std::min(chunk_tokens, n);
    const torch::Tensor weight_t = weight.t();
    // One (chunk, V) block reused by every chunk: the only vocab-wide memory.
    torch::Tensor block = torch::empty({chunk, vocab}, hidden.options());
    torch::Tensor losses = torch::empty({n}, hidden.options());
    torch::Tensor grad_hidden, grad_weight;
    if (gradients) {
      grad_hidden = torch::empty_like(hidden);
      grad_weight = torch::zeros_like(weight);
    }
    const double inverse_n = 1.0 / static_cast<double>(n);
    for (int64_t start = 0; start < n; start += chunk) {
      const int64_t rows = std::min(chunk, n - start);
      const torch::Tensor h = hidden.narrow(0, start, rows);
      const torch::Tensor t = targets.narrow(0, start, rows).unsqueeze(1);
      torch::Tensor z = block.narrow(0, 0, rows);
      torch::mm_out(z, h, weight_t);
      const torch::Tensor max = std::get<0>(z.max(1, /*keepdim=*/true));
      // Shifted by the row max so exp(z - m) <= 1 never overflows.
      z.sub_(max);
      const torch::Tensor target_shifted = z.gather(1, t).squeeze(1);
      const torch::Tensor sum = z.exp_().sum(1, /*keepdim=*/true);
      // lse - z_t = (m + log sum) - (m + target_shifted); m cancels exactly.
      losses.narrow(0, start, rows)
          .copy_(sum.log().squeeze(1) - target_shifted);
      if (!gradients) continue;
      // softmax = exp(z - m) / sum: the same exponentials as the loss.
      z.div_(sum);
      z.scatter_(1, t, z.gather(1, t) - 1);
      z.mul_(inverse_n);
      torch::Tensor dh = grad_hidden.narrow(0, start, rows);
      torch::mm_out(dh, z, weight);
      // Accumulated in chunk order by one addmm each: deterministic.
      grad_weight.addmm_(z.t(), h);
    }
    ctx->save_for_backward({grad_hidden, grad_weight});
    // One sum over all N losses: the same total whatever the chunk size.
    return losses.sum() * inverse_n;
  }

  static torch::autograd::variable_list backward(
      torch::autograd::AutogradContext* ctx,
      torch::autograd::variable_list grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    TORCH_CHECK(saved[0].defined(),
                "FusedCrossEntropy: backward of a call made without gradients");
    // The loss is linear in nothing but its scale: dL = dL_out * (dL/d . at 1).
    const torch::Tensor& scale = grad_outputs[0];
    return {saved[0] * scale, saved[1] * scale, torch::Tensor(),
            torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor FusedCrossEntropy(const torch::Tensor& hidden,
                                const torch::Tensor& weight,
                                const torch::Tensor& targets,
                                int64_t chunk_tokens) {
  TORCH_CHECK(hidden.dim() >= 1 && weight.dim() == 2 &&
                  hidden.size(-1) == weight.size(1),
              "FusedCrossEntropy: hidden (..., d), weight (V, d)");
  TORCH_CHECK(
      hidden.numel() / std::max<int64_t>(hidden.size(-1), 1) == targets.numel(),
      "FusedCrossEntropy: one target per hidden row");
  TORCH_CHECK(targets.scalar_type() == torch::kLong,
              "FusedCrossEntropy: int64 targets");
  TORCH_CHECK(hidden.scalar_type() == weight.scalar_type(),
              "FusedCrossEntropy: hidden and weight of one dtype");
  TORCH_CHECK(chunk_tokens >= 1, "FusedCrossEntropy: chunk_tokens >= 1");
  TORCH_CHECK(targets.numel() > 0, "FusedCrossEntropy: at least one token");
  TORCH_CHECK(targets.min().item<int64_t>() >= 0 &&
                  targets.max().item<int64_t>() < weight.size(0),
              "FusedCrossEntropy: targets in [0, V)");
  // Gradients are formed in the forward only when a backward can follow.
  const bool gradients = torch::GradMode::is_enabled() &&
                         (hidden.requires_grad() || weight.requires_grad());
  // Flattening stays outside the Function, so autograd reshapes dh back.
  return FusedCrossEntropyFunction::apply(
      hidden.reshape({-1, hidden.size(-1)}).contiguous(), weight.contiguous(),
      targets.reshape({-1}).contiguous(), chunk_tokens, gradients);
}

torch::Tensor UnfusedCrossEntropy(const torch::Tensor& hidden,
                                  const torch::Tensor& weight,
                                  const torch::Tensor& targets) {
  const torch::Tensor logits = torch::nn::functional::linear(
      hidden.reshape({-1, hidden.size(-1)}), weight);
  return torch::nn::functional::cross_entropy(logits, targets.reshape({-1}));
}

}  // namespace sparse_layers::layers
