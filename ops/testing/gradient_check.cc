#include "ops/testing/gradient_check.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace sparse_layers::layers::testing {

std::vector<std::string> CheckGradients(
    const std::function<torch::Tensor()>& loss,
    const std::vector<std::pair<std::string, torch::Tensor>>& parameters,
    int entries_per_parameter, double tolerance) {
  for (const auto& [name, parameter] : parameters) {
    if (parameter.grad().defined()) parameter.mutable_grad().zero_();
  }
  loss().backward();
  std::vector<std::string> mismatches;
  constexpr double kStep = 1e-6;
  for (const auto& [name, parameter] : parameters) {
    TORCH_CHECK(parameter.scalar_type() == torch::kDouble,
                "gradient checks need double parameters");
    const torch::Tensor grad =
        parameter.grad().defined()
            ? parameter.grad().clone().view({-1})
            : torch::zeros({parameter.numel()}, torch::kDouble);
    torch::NoGradGuard no_grad;
    torch::Tensor flat = parameter.view({-1});
    const int64_t stride =
        std::max<int64_t>(1, flat.size(0) / entries_per_parameter);
    for (int64_t i = 0; i < flat.size(0); i += stride) {
      const double saved = flat[i].item<double>();
      flat[i] = saved + kStep;
      const double plus = loss().item<double>();
      flat[i] = saved - kStep;
      const double minus = loss().item<double>();
      flat[i] = saved;
      const double numeric = (plus - minus) / (2 * kStep);
      const double analytic = grad[i].item<double>();
      if (std::abs(numeric - analytic) > tolerance) {
        std::ostringstream message;
        message << name << "[" << i << "]: autograd " << analytic
                << ", finite difference " << numeric;
        mismatches.push_back(message.str());
      }
    }
  }
  return mismatches;
}

double MaxRelativeError(const torch::Tensor& actual,
                        const torch::Tensor& reference) {
  return (actual - reference).abs().max().item<double>() /
         reference.abs().max().item<double>();
}

}  // namespace sparse_layers::layers::testing
