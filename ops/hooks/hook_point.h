// Hook points: named places in a model where activations can be captured,
// edited (steering) or replaced, the C++ counterpart of TransformerLens hooks.
// An unused hook point costs one empty-vector check.
#ifndef SPARSE_LAYERS_OPS_HOOKS_HOOK_POINT_H_
#define SPARSE_LAYERS_OPS_HOOKS_HOOK_POINT_H_

#include <torch/torch.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace sparse_layers::layers {

// Receives the activation and returns what flows on (the same tensor to only
// observe it).
using HookFn = std::function<torch::Tensor(const torch::Tensor&)>;

class HookPoint {
 public:
  explicit HookPoint(std::string name = "") : name_(std::move(name)) {}

  const std::string& name() const { return name_; }
  bool active() const { return !hooks_.empty(); }
  void Add(HookFn hook) { hooks_.push_back(std::move(hook)); }
  void Clear() { hooks_.clear(); }

  torch::Tensor operator()(torch::Tensor x) const {
    for (const HookFn& hook : hooks_) x = hook(x);
    return x;
  }

 private:
  std::string name_;
  std::vector<HookFn> hooks_;
};

// Stores a detached copy of every activation passing through in *sink.
HookFn CaptureHook(std::vector<torch::Tensor>* sink);

// Adds alpha * direction (broadcast over leading dimensions): steering.
HookFn AddDirectionHook(torch::Tensor direction, double alpha);

// Replaces the activation with zeros: zero-ablation of the layer whose output
// the hook point is (e.g. blocks.<i>.ffn.hook_out).
HookFn ZeroAblationHook();

// Replaces the activation with replacement(activation).
HookFn ReplaceHook(
    std::function<torch::Tensor(const torch::Tensor&)> replacement);

}  // namespace sparse_layers::layers

#endif  // SPARSE_LAYERS_OPS_HOOKS_HOOK_POINT_H_
