// AdamW over flat buffers: each parameter group's parameters become views into
// one contiguous buffer and their gradients views into one contiguous gradient
// buffer (autograd accumulates into it in place), so a step is a handful of
// whole-buffer ops instead of ~9 per tensor. The elementwise op sequence is
// torch::optim::AdamW's (LibTorch 1.13), so results are bit-identical to it
// (flat_adamw_test). One difference: every parameter is updated every step (a
// parameter no loss reached has zero gradient), where torch::optim::AdamW
// skips parameters whose gradient is undefined.
#ifndef SPARSE_LAYERS_PIPELINES_TRAIN_FLAT_ADAMW_H_
#define SPARSE_LAYERS_PIPELINES_TRAIN_FLAT_ADAMW_H_

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "models/checkpoints/checkpoint.h"

namespace sparse_layers::train {

struct FlatAdamWOptions {
  double learning_rate = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double epsilon = 1e-8;
};

// Parameters sharing a weight decay (decoupled: p *= 1 - lr * weight_decay).
struct FlatAdamWGroup {
  std::vector<torch::Tensor> parameters;
  double weight_decay = 0;
};

class FlatAdamW {
 public:
  // Moves the groups' parameters (distinct tensors of one dtype and device
  // per group) into flat buffers, values unchanged, and attaches zeroed
  // gradient views.
  static absl::StatusOr<std::unique_ptr<FlatAdamW>> Create(
      std::vector<FlatAdamWGroup> groups, const FlatAdamWOptions& options);

  void set_learning_rate(double learning_rate) {
    options_.learning_rate = learning_rate;
  }

  // Zeroes the gradient buffers (gradients stay defined views).
  void ZeroGrad();
  // The L2 norm of all gradients, one reduction per group buffer; when
  // max_norm > 0 the gradients are scaled by max_norm / (norm + 1e-6) if that
  // is below 1, as torch::nn::utils::clip_grad_norm_ does.
  double ClipGradNorm(double max_norm);
  void Step();

  // Per group, per parameter: steps and views of the moments (undefined
  // moments for a parameter not stepped yet), as checkpoints store them.
  layers::AdamWState State() const;
  // Copies `state` (as State() or a checkpoint of torch::optim::AdamW with
  // the same groups has it) into the buffers.
  absl::Status LoadState(const layers::AdamWState& state);

 private:
  struct Group {
    std::vector<torch::Tensor> parameters;
    std::vector<torch::Tensor> grad_views;  // What each parameter.grad() is.
    std::vector<int64_t> offsets;  // Into the buffers, one more than params.
    std::vector<int64_t> steps;  // Per parameter (old checkpoints may differ).
    double weight_decay = 0;
    torch::Tensor values, grads, exp_avg, exp_avg_sq, denominator;
    // Parameter i's flat part of one of the buffers, in its own shape.
    torch::Tensor Part(const torch::Tensor& buffer, size_t i) const {
      return buffer.slice(0, offsets[i], offsets[i + 1])
          .view(parameters[i].sizes());
    }
  };
  explicit FlatAdamW(const FlatAdamWOptions& options) : options_(options) {}
  // Gradients autograd replaced rather than accumulated into are copied back
  // into the buffer.
  static void ReattachGradients(Group& group);

  FlatAdamWOptions options_;
  std::vector<Group> groups_;
};

}  // namespace sparse_layers::train

#endif  // SPARSE_LAYERS_PIPELINES_TRAIN_FLAT_ADAMW_H_
