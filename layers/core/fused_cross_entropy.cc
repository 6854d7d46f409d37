#include "layers/core/fused_cross_entropy.h"

#include <algorithm>

namespace sparse_layers::layers {
namespace {

class FusedCrossEntropyFunction
    : public torch::autograd::Function<FusedCrossEntropyFunction> {
 public:
  // hidden (N, d), weight (V, d), targets (N), all contiguous.
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx,
                               const torch::Tensor& hidden,
                               const torch::Tensor& weight,
                               const torch::Tensor& targets,
                               int64_t chunk_tokens) {
    const int64_t n = hidden.size(0), vocab = weight.size(0);
    const int64_t chunk = std::min(chunk_tokens, n);
    const torch::Tensor weight_t = weight.t();
    // One (chunk, V) block reused by every chunk: the only vocab-wide memory.
    torch::Tensor block = torch::empty({chunk, vocab}, hidden.options());
    torch::Tensor row_max = torch::empty({n}, hidden.options());
    torch::Tensor log_sum = torch::empty({n}, hidden.options());
    torch::Tensor losses = torch::empty({n}, hidden.options());
    for (int64_t start = 0; start < n; start += chunk) {
      const int64_t rows = std::min(chunk, n - start);
      torch::Tensor z = block.narrow(0, 0, rows);
      torch::mm_out(z, hidden.narrow(0, start, rows), weight_t);
      const torch::Tensor max = std::get<0>(z.max(1, /*keepdim=*/true));
      // Shifted by the row max so exp(z - m) <= 1 never overflows.
      z.sub_(max);
      const torch::Tensor target_shifted =
          z.gather(1, targets.narrow(0, start, rows).unsqueeze(1)).squeeze(1);
      const torch::Tensor chunk_log_sum = z.exp_().sum(1).log_();
      // Kept apart, not as m + log_sum: at large logits the sum would round
      // to ulp(m) and the backward's softmax with it.
      row_max.narrow(0, start, rows).copy_(max.squeeze(1));
      log_sum.narrow(0, start, rows).copy_(chunk_log_sum);
      // lse - z_t = (m + log_sum) - (m + target_shifted); m cancels exactly.
      losses.narrow(0, start, rows).copy_(chunk_log_sum - target_shifted);
    }
    ctx->save_for_backward({hidden, weight, targets, row_max, log_sum});
    ctx->saved_data["chunk"] = chunk;
    // One sum over all N losses: the same total whatever the chunk size.
    return losses.sum() / static_cast<double>(n);
  }

  static torch::autograd::variable_list backward(
      torch::autograd::AutogradContext* ctx,
      torch::autograd::variable_list grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor &hidden = saved[0], &weight = saved[1],
                        &targets = saved[2], &row_max = saved[3],
                        &log_sum = saved[4];
    const int64_t chunk = ctx->saved_data["chunk"].toInt();
    const int64_t n = hidden.size(0), vocab = weight.size(0);
    const bool need_hidden = ctx->needs_input_grad(0);
    const bool need_weight = ctx->needs_input_grad(1);
    // dL/dz = (dL_out / N) (softmax - onehot); a 0-dim tensor, no host sync.
    const torch::Tensor scale = grad_outputs[0] / static_cast<double>(n);
    const torch::Tensor weight_t = weight.t();
    torch::Tensor grad_hidden =
        need_hidden ? torch::empty_like(hidden) : torch::Tensor();
    torch::Tensor grad_weight =
        need_weight ? torch::zeros_like(weight) : torch::Tensor();
    torch::Tensor block = torch::empty({chunk, vocab}, hidden.options());
    for (int64_t start = 0; start < n; start += chunk) {
      const int64_t rows = std::min(chunk, n - start);
      const torch::Tensor h = hidden.narrow(0, start, rows);
      torch::Tensor z = block.narrow(0, 0, rows);
      // Recomputed rather than stored: the point of the fusion.
      torch::mm_out(z, h, weight_t);
      // softmax(z) = exp((z - m) - log_sum), rounded as in the forward.
      z.sub_(row_max.narrow(0, start, rows).unsqueeze(1))
          .sub_(log_sum.narrow(0, start, rows).unsqueeze(1))
          .exp_();
      const torch::Tensor t = targets.narrow(0, start, rows).unsqueeze(1);
      z.scatter_(1, t, z.gather(1, t) - 1);
      z.mul_(scale);
      if (need_hidden) {
        torch::Tensor out = grad_hidden.narrow(0, start, rows);
        torch::mm_out(out, z, weight);
      }
      // Accumulated in chunk order by one addmm each: deterministic.
      if (need_weight) grad_weight.addmm_(z.t(), h);
    }
    return {grad_hidden, grad_weight, torch::Tensor(), torch::Tensor()};
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
  // Flattening stays outside the Function, so autograd reshapes dh back.
  return FusedCrossEntropyFunction::apply(
      hidden.reshape({-1, hidden.size(-1)}).contiguous(), weight.contiguous(),
      targets.reshape({-1}).contiguous(), chunk_tokens);
}

torch::Tensor UnfusedCrossEntropy(const torch::Tensor& hidden,
                                  const torch::Tensor& weight,
                                  const torch::Tensor& targets) {
  const torch::Tensor logits = torch::nn::functional::linear(
      hidden.reshape({-1, hidden.size(-1)}), weight);
  return torch::nn::functional::cross_entropy(logits, targets.reshape({-1}));
}

}  // namespace sparse_layers::layers
