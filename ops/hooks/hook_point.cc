#include "ops/hooks/hook_point.h"

namespace sparse_layers::layers {

HookFn CaptureHook(std::vector<torch::Tensor>* sink) {
  return [sink](const torch::Tensor& x) {
    sink->push_back(x.detach().clone());
    return x;
  };
}

HookFn AddDirectionHook(torch::Tensor direction, double alpha) {
  return [direction = std::move(direction), alpha](const torch::Tensor& x) {
    return x + alpha * direction.to(x.dtype());
  };
}

HookFn ZeroAblationHook() {
  return [](const torch::Tensor& x) { return torch::zeros_like(x); };
}

HookFn ReplaceHook(
    std::function<torch::Tensor(const torch::Tensor&)> replacement) {
  return [replacement = std::move(replacement)](const torch::Tensor& x) {
    return replacement(x);
  };
}

}  // namespace sparse_layers::layers
