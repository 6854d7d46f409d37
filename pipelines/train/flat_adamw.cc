#include "pipelines/train/flat_adamw.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"

namespace sparse_layers::train {
namespace {

// torch::optim::AdamW's update (LibTorch 1.13 adamw.cpp), op for op and with
// the same scalars, so that a whole buffer gets the per-tensor bits; `step`
// is the count including this step.
void AdamWUpdate(const torch::Tensor& value, const torch::Tensor& grad,
                 const torch::Tensor& exp_avg, const torch::Tensor& exp_avg_sq,
                 torch::Tensor denominator, int64_t step, double learning_rate,
                 double weight_decay, const FlatAdamWOptions& options) {
  if (weight_decay != 0) value.mul_(1 - learning_rate * weight_decay);
  const double bias_correction1 = 1 - std::pow(options.beta1, step);
  const double bias_correction2 = 1 - std::pow(options.beta2, step);
  exp_avg.mul_(options.beta1).add_(grad, 1 - options.beta1);
  exp_avg_sq.mul_(options.beta2).addcmul_(grad, grad, 1 - options.beta2);
  // The preallocated denominator avoids two buffer-sized temporaries.
  torch::sqrt_out(denominator, exp_avg_sq)
      .div_(std::sqrt(bias_correction2))
      .add_(options.epsilon);
  value.addcdiv_(exp_avg, denominator, -learning_rate / bias_correction1);
}

}  // namespace

absl::StatusOr<std::unique_ptr<FlatAdamW>> FlatAdamW::Create(
    std::vector<FlatAdamWGroup> groups, const FlatAdamWOptions& options) {
  std::unique_ptr<FlatAdamW> adamw(new FlatAdamW(options));
  absl::flat_hash_set<const void*> seen;
  torch::NoGradGuard no_grad;
  for (size_t g = 0; g < groups.size(); ++g) {
    Group group;
    group.weight_decay = groups[g].weight_decay;
    group.parameters = std::move(groups[g].parameters);
    group.offsets = {0};
    torch::TensorOptions buffer_options = torch::dtype(torch::kFloat);
    for (size_t i = 0; i < group.parameters.size(); ++i) {
      const torch::Tensor& p = group.parameters[i];
      if (!p.defined() || !p.is_floating_point()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "FlatAdamW: parameter ", i, " of group ", g, " is not floating"));
      }
      if (!seen.insert(p.unsafeGetTensorImpl()).second) {
        return absl::InvalidArgumentError(absl::StrCat(
            "FlatAdamW: parameter ", i, " of group ", g, " is listed twice"));
      }
      if (i == 0) {
        buffer_options = torch::dtype(p.scalar_type()).device(p.device());
      } else if (p.scalar_type() != group.parameters[0].scalar_type() ||
                 p.device() != group.parameters[0].device()) {
        return absl::InvalidArgumentError(
            absl::StrCat("FlatAdamW: parameter ", i, " of group ", g,
                         " differs from the group's first in dtype or device"));
      }
      group.offsets.push_back(group.offsets.back() + p.numel());
    }
    const int64_t total = group.offsets.back();
    group.values = torch::empty({total}, buffer_options);
    group.grads = torch::zeros({total}, buffer_options);
    group.exp_avg = torch::zeros({total}, buffer_options);
    group.exp_avg_sq = torch::zeros({total}, buffer_options);
    group.denominator = torch::empty({total}, buffer_options);
    group.steps.assign(group.parameters.size(), 0);
    for (size_t i = 0; i < group.parameters.size(); ++i) {
      const torch::Tensor& p = group.parameters[i];
      torch::Tensor view = group.Part(group.values, i);
      view.copy_(p);
      p.set_data(view);
      group.grad_views.push_back(group.Part(group.grads, i));
      p.mutable_grad() = group.grad_views.back();
    }
    adamw->groups_.push_back(std::move(group));
  }
  return adamw;
}

void FlatAdamW::ReattachGradients(Group& group) {
  for (size_t i = 0; i < group.parameters.size(); ++i) {
    const torch::Tensor& p = group.parameters[i];
    const torch::Tensor& view = group.grad_views[i];
    if (p.grad().unsafeGetTensorImpl() == view.unsafeGetTensorImpl()) continue;
    if (p.grad().defined()) {
      view.copy_(p.grad());
    } else {
      view.zero_();
    }
    p.mutable_grad() = view;
  }
}

void FlatAdamW::ZeroGrad() {
  torch::NoGradGuard no_grad;
  for (Group& group : groups_) {
    group.grads.zero_();
    ReattachGradients(group);
  }
}

double FlatAdamW::ClipGradNorm(double max_norm) {
  torch::NoGradGuard no_grad;
  double sum_of_squares = 0;
  for (Group& group : groups_) {
    if (group.parameters.empty()) continue;
    ReattachGradients(group);
    const double norm = group.grads.norm().item<double>();
    sum_of_squares += norm * norm;
  }
  const double norm = std::sqrt(sum_of_squares);
  const double coefficient = max_norm / (norm + 1e-6);
  if (max_norm > 0 && coefficient < 1) {
    for (Group& group : groups_) group.grads.mul_(coefficient);
  }
  return norm;
}

void FlatAdamW::Step() {
  torch::NoGradGuard no_grad;
  for (Group& group : groups_) {
    if (group.parameters.empty()) continue;
    ReattachGradients(group);
    const bool same_step =
        std::all_of(group.steps.begin(), group.steps.end(),
                    [&](int64_t step) { return step == group.steps[0]; });
    for (int64_t& step : group.steps) ++step;
    if (same_step) {
      AdamWUpdate(group.values, group.grads, group.exp_avg, group.exp_avg_sq,
                  group.denominator, group.steps[0], options_.learning_rate,
                  group.weight_decay, options_);
      continue;
    }
    // Unequal counts (from a checkpoint of torch::optim::AdamW, which skips
    // parameters without gradients): one update per parameter.
    for (size_t i = 0; i < group.parameters.size(); ++i) {
      AdamWUpdate(group.Part(group.values, i), group.Part(group.grads, i),
                  group.Part(group.exp_avg, i), group.Part(group.exp_avg_sq, i),
                  group.Part(group.denominator, i), group.steps[i],
                  options_.learning_rate, group.weight_decay, options_);
    }
  }
}

layers::AdamWState FlatAdamW::State() const {
  layers::AdamWState state(groups_.size());
  for (size_t g = 0; g < groups_.size(); ++g) {
    const Group& group = groups_[g];
    for (size_t i = 0; i < group.parameters.size(); ++i) {
      layers::AdamWSlot& slot = state[g].emplace_back();
      slot.step = group.steps[i];
      if (slot.step == 0) continue;
      slot.exp_avg = group.Part(group.exp_avg, i);
      slot.exp_avg_sq = group.Part(group.exp_avg_sq, i);
    }
  }
  return state;
}

absl::Status FlatAdamW::LoadState(const layers::AdamWState& state) {
  if (state.size() > groups_.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("optimizer state has ", state.size(),
                     " parameter groups, the optimizer ", groups_.size()));
  }
  for (size_t g = 0; g < state.size(); ++g) {
    const Group& group = groups_[g];
    if (state[g].size() > group.parameters.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "optimizer state has ", state[g].size(), " parameters in group ", g,
          ", the optimizer ", group.parameters.size()));
    }
    for (size_t i = 0; i < state[g].size(); ++i) {
      const layers::AdamWSlot& slot = state[g][i];
      if (slot.step == 0) continue;
      const auto sizes = group.parameters[i].sizes();
      if (!slot.exp_avg.defined() || !slot.exp_avg_sq.defined() ||
          slot.exp_avg.sizes() != sizes || slot.exp_avg_sq.sizes() != sizes) {
        return absl::InvalidArgumentError(absl::StrCat(
            "optimizer state of parameter ", i, " of group ", g,
            " does not have the parameter's shape ", c10::str(sizes)));
      }
    }
  }
  torch::NoGradGuard no_grad;
  for (size_t g = 0; g < groups_.size(); ++g) {
    Group& group = groups_[g];
    group.exp_avg.zero_();
    group.exp_avg_sq.zero_();
    group.steps.assign(group.parameters.size(), 0);
    if (g >= state.size()) continue;
    for (size_t i = 0; i < state[g].size(); ++i) {
      const layers::AdamWSlot& slot = state[g][i];
      if (slot.step == 0) continue;
      group.steps[i] = slot.step;
      group.Part(group.exp_avg, i).copy_(slot.exp_avg);
      group.Part(group.exp_avg_sq, i).copy_(slot.exp_avg_sq);
    }
  }
  return absl::OkStatus();
}

}  // namespace sparse_layers::train
