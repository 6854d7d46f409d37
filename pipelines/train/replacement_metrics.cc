#include "pipelines/train/replacement_metrics.h"

#include <algorithm>
#include <limits>

#include "layers/replacement/nmse.h"

namespace sparse_layers::train {

FiringCounter::FiringCounter(int64_t units)
    : counts_(torch::zeros({units}, torch::kLong)) {}

void FiringCounter::Add(const layers::TopKCodes& codes) {
  torch::NoGradGuard no_grad;
  const torch::Tensor fired = codes.values.detach() > 0;
  const torch::Tensor indices = codes.indices.masked_select(fired);
  counts_.index_add_(0, indices, torch::ones_like(indices));
  rows_ += codes.values.size(0);
  active_ += indices.numel();
}

double FiringCounter::L0() const {
  return rows_ > 0 ? static_cast<double>(active_) / rows_ : 0.0;
}

torch::Tensor FiringCounter::Frequencies() const {
  return counts_.to(torch::kDouble) / std::max<int64_t>(rows_, 1);
}

double FiringCounter::DeadFraction(double threshold) const {
  return (Frequencies() < threshold).to(torch::kDouble).mean().item<double>();
}

void FvuAccumulator::Add(const torch::Tensor& target,
                         const torch::Tensor& prediction) {
  const torch::Tensor y =
      target.to(torch::kDouble).reshape({-1, target.size(-1)});
  const torch::Tensor y_hat =
      prediction.to(torch::kDouble).reshape({-1, target.size(-1)});
  squared_error_ += (y - y_hat).square().sum().item<double>();
  squared_norm_ += y.square().sum().item<double>();
  sum_ = sum_.defined() ? sum_ + y.sum(0) : y.sum(0);
  rows_ += y.size(0);
}

double FvuAccumulator::Value() const {
  if (rows_ == 0) return 0;
  // sum ||y - y_bar||^2 = sum ||y||^2 - N ||y_bar||^2.
  const double variance =
      squared_norm_ - sum_.square().sum().item<double>() / rows_;
  return squared_error_ / variance;
}

ActivationFit EvaluateOnActivations(layers::SparseReplacementImpl& layer,
                                    const datasets::ActivationSet& data,
                                    bool on_output, int64_t rows,
                                    int64_t chunk) {
  torch::NoGradGuard no_grad;
  FiringCounter firing(layer.units());
  FvuAccumulator fvu;
  double weighted = 0, error = 0, energy = 0;
  rows = std::min(rows, data.rows());
  for (int64_t begin = 0; begin < rows; begin += chunk) {
    const int64_t end = std::min(rows, begin + chunk);
    auto [x, y] = data.Range(begin, end);
    const torch::Tensor input = on_output ? y : x;
    const layers::TopKCodes codes = layer.Encode(input, layer.options().top_k);
    firing.Add(codes);
    const torch::Tensor prediction = layer.DecodeSparse(input, codes);
    weighted +=
        layers::NormalisedMse(prediction, y).item<double>() * (end - begin);
    error += (prediction - y).pow(2).sum().item<double>();
    energy += y.pow(2).sum().item<double>();
    fvu.Add(y, prediction);
  }
  return {weighted / rows, error / energy, firing.L0(), firing.DeadFraction(),
          fvu.Value()};
}

ActivationFit EvaluateLorsaOnActivations(layers::LorsaImpl& lorsa,
                                         const datasets::ActivationSet& data,
                                         int64_t length, int64_t windows,
                                         int64_t chunk, double input_scale,
                                         double output_scale) {
  torch::NoGradGuard no_grad;
  windows = std::min(windows, data.rows() / length);
  const int64_t d = data.d_out();
  const int64_t heads = lorsa.options().ov_heads;
  torch::Tensor fired = torch::zeros({heads}, torch::kLong);
  FvuAccumulator fvu;
  double error = 0, energy = 0, active = 0;
  for (int64_t begin = 0; begin < windows; begin += chunk) {
    const int64_t end = std::min(windows, begin + chunk);
    auto [x, y] = data.Range(begin * length, end * length);
    const layers::LorsaOutput out = lorsa.Run(
        x.view({end - begin, length, d}) * input_scale, lorsa.options().top_k);
    const torch::Tensor prediction = out.output.reshape({-1, d}) / output_scale;
    const torch::Tensor nonzero = out.activations.ne(0).reshape({-1, heads});
    fired += nonzero.sum(0);
    active += nonzero.sum().item<double>();
    error += (prediction - y).pow(2).sum().item<double>();
    energy += y.pow(2).sum().item<double>();
    fvu.Add(y, prediction);
  }
  const double rows = static_cast<double>(fvu.rows());
  return {fvu.Value(), error / energy, active / rows,
          fired.eq(0).to(torch::kDouble).mean().item<double>(), fvu.Value()};
}

double CeRecovered(double base, double zero_ablated, double replaced) {
  return (zero_ablated - replaced) / (zero_ablated - base);
}

double NormalisedRank(const torch::Tensor& matrix) {
  const torch::Tensor w = matrix.detach().to(torch::kDouble);
  const torch::Tensor singular = torch::linalg::svdvals(w, c10::nullopt);
  const double largest = singular.max().item<double>();
  if (largest == 0) return 0.0;
  const int64_t rows = w.size(0), cols = w.size(1);
  // torch.linalg.matrix_rank's default tolerance for float32 weights.
  const double tolerance =
      std::max(rows, cols) * std::numeric_limits<float>::epsilon() * largest;
  const int64_t rank = (singular > tolerance).sum().item<int64_t>();
  return static_cast<double>(rank) / std::min(rows, cols);
}

}  // namespace sparse_layers::train
