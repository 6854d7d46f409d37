#include "layers/ffn/dense_mlp.h"

#include <cmath>

namespace sparse_layers::layers {
namespace {

torch::nn::Linear MakeLinear(torch::nn::Module& parent, const char* name,
                             int64_t in, int64_t out, double std,
                             bool bias = false) {
  auto linear = parent.register_module(
      name, torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(bias)));
  torch::NoGradGuard no_grad;
  torch::nn::init::normal_(linear->weight, 0.0, std);
  if (bias) linear->bias.zero_();
  return linear;
}

double OutputStd(const FeedForwardOptions& options) {
  return 0.02 / std::sqrt(2.0 * options.n_layers);
}

FeedForwardRegistration kGelu("gelu_mlp", config::FfnShape::kDense,
                              [](const FeedForwardOptions& o) {
                                return std::make_shared<DenseMlpImpl>(
                                    o, Activation::kGelu);
                              });
FeedForwardRegistration kRelu("relu_mlp", config::FfnShape::kDense,
                              [](const FeedForwardOptions& o) {
                                return std::make_shared<DenseMlpImpl>(
                                    o, Activation::kRelu);
                              });
FeedForwardRegistration kSolu("solu_mlp", config::FfnShape::kDense,
                              [](const FeedForwardOptions& o) {
                                return std::make_shared<DenseMlpImpl>(
                                    o, Activation::kSolu);
                              });
FeedForwardRegistration kSwiGlu("swiglu", config::FfnShape::kDense,
                                [](const FeedForwardOptions& o) {
                                  return std::make_shared<GatedMlpImpl>(
                                      o, Activation::kSilu);
                                });
FeedForwardRegistration kGeGlu("geglu", config::FfnShape::kDense,
                               [](const FeedForwardOptions& o) {
                                 return std::make_shared<GatedMlpImpl>(
                                     o, Activation::kGelu);
                               });

}  // namespace

DenseMlpImpl::DenseMlpImpl(const FeedForwardOptions& options,
                           Activation activation)
    : options_(options), activation_(activation) {
  in = MakeLinear(*this, "in", options.d_model, options.d_ffn, 0.02,
                  options.bias);
  out = MakeLinear(*this, "out", options.d_ffn, options.d_model,
                   OutputStd(options), options.bias);
  if (activation == Activation::kSolu) {
    solu_norm = register_module(
        "solu_norm",
        torch::nn::LayerNorm(torch::nn::LayerNormOptions({options.d_ffn})));
  }
}

torch::Tensor DenseMlpImpl::Forward(const torch::Tensor& x,
                                    const HookPoint& hidden) {
  torch::Tensor h = in->forward(x);
  switch (activation_) {
    case Activation::kGelu:
      h = options_.gelu_tanh ? torch::gelu(h, "tanh") : torch::gelu(h);
      break;
    case Activation::kRelu:
      h = torch::relu(h);
      break;
    default:  // SoLU: softmax over the hidden units, then LayerNorm.
      h = solu_norm->forward(h * torch::softmax(h, -1));
  }
  if (hidden.active()) h = hidden(h);
  return out->forward(h);
}

int64_t DenseMlpImpl::ForwardFlopsPerToken() const {
  return 2 * 2 * options_.d_model * options_.d_ffn;
}

GatedMlpImpl::GatedMlpImpl(const FeedForwardOptions& options,
                           Activation gate_activation)
    : options_(options), gate_activation_(gate_activation) {
  gate = MakeLinear(*this, "gate", options.d_model, options.d_ffn, 0.02);
  up = MakeLinear(*this, "up", options.d_model, options.d_ffn, 0.02);
  down = MakeLinear(*this, "down", options.d_ffn, options.d_model,
                    OutputStd(options));
}

torch::Tensor GatedMlpImpl::Forward(const torch::Tensor& x,
                                    const HookPoint& hidden) {
  const torch::Tensor g = gate->forward(x);
  torch::Tensor h = (gate_activation_ == Activation::kGelu ? torch::gelu(g)
                                                           : torch::silu(g)) *
                    up->forward(x);
  if (hidden.active()) h = hidden(h);
  return down->forward(h);
}

int64_t GatedMlpImpl::ForwardFlopsPerToken() const {
  return 3 * 2 * options_.d_model * options_.d_ffn;
}

}  // namespace sparse_layers::layers
