#include "analysis/bsp/feature_classifiers.h"

namespace sparse_layers::analysis {
namespace {

// phi_{f,t} on every position as float 0/1 (N, F); a dead feature (maximum
// 0) never fires, so it scores F1 = 0 and labels nothing.
torch::Tensor Fires(const torch::Tensor& features, const torch::Tensor& maxima,
                    double t) {
  return (features > maxima * t).logical_and(maxima > 0).to(torch::kFloat);
}

}  // namespace

std::vector<double> DefaultThresholds() {
  std::vector<double> thresholds;
  for (int i = 0; i <= 10; ++i) thresholds.push_back(i / 10.0);
  return thresholds;
}

torch::Tensor FeatureMaxima(const torch::Tensor& activations) {
  return std::get<0>(activations.abs().max(0)).to(torch::kFloat);
}

CoverageResult Coverage(const torch::Tensor& features,
                        const torch::Tensor& maxima,
                        const torch::Tensor& properties,
                        const std::vector<double>& thresholds) {
  torch::NoGradGuard no_grad;
  const torch::Tensor labels = properties.to(torch::kFloat);  // (N, G)
  const torch::Tensor positives = labels.sum(0);              // (G)
  CoverageResult result;
  result.live_features = (maxima > 0).sum().item<int64_t>();
  torch::Tensor best_per_property = torch::zeros_like(positives);
  result.coverage_code = -1;
  for (size_t i = 0; i < thresholds.size(); ++i) {
    double mean_best = 0;
    if (result.live_features > 0) {
      const torch::Tensor fires = Fires(features, maxima, thresholds[i]);
      const torch::Tensor true_positives = torch::matmul(fires.t(), labels);
      // F1 = 2PR / (P + R) = 2 TP / (on + pos); 0 when nothing fires or holds.
      const torch::Tensor denominator =
          fires.sum(0).unsqueeze(1) + positives.unsqueeze(0);
      const torch::Tensor f1 =
          torch::where(denominator > 0, 2 * true_positives / denominator,
                       torch::zeros_like(denominator));
      const torch::Tensor best = std::get<0>(f1.max(0));  // (G)
      best_per_property = torch::maximum(best_per_property, best);
      mean_best = best.mean().item<double>();
    }
    result.mean_best_f1_per_threshold.push_back(mean_best);
    if (mean_best > result.coverage_code) {
      result.coverage_code = mean_best;
      result.best_threshold_code = static_cast<int>(i);
    }
  }
  result.coverage_paper = best_per_property.mean().item<double>();
  return result;
}

torch::Tensor HighPrecisionLabels(const torch::Tensor& features,
                                  const torch::Tensor& maxima,
                                  const torch::Tensor& properties, double t,
                                  const LabellingRule& rule) {
  torch::NoGradGuard no_grad;
  const torch::Tensor fires = Fires(features, maxima, t);
  const torch::Tensor true_positives =
      torch::matmul(fires.t(), properties.to(torch::kFloat));  // (F, G)
  const torch::Tensor on = fires.sum(0).unsqueeze(1);
  return (true_positives >= rule.min_true_positives)
      .logical_and(true_positives >= rule.min_precision * on)
      .logical_and(on > 0);
}

ReconstructionResult Reconstruction(const torch::Tensor& train_features,
                                    const torch::Tensor& train_properties,
                                    const torch::Tensor& test_features,
                                    const torch::Tensor& test_properties,
                                    const torch::Tensor& maxima,
                                    const std::vector<double>& thresholds,
                                    const LabellingRule& rule) {
  torch::NoGradGuard no_grad;
  const torch::Tensor truth = test_properties.to(torch::kBool);
  ReconstructionResult result;
  result.reconstruction_code = -1;
  result.reconstruction_paper = -1;
  for (size_t i = 0; i < thresholds.size(); ++i) {
    const double t = thresholds[i];
    const torch::Tensor labels =
        HighPrecisionLabels(train_features, maxima, train_properties, t, rule)
            .to(torch::kFloat);  // (F, G)
    const torch::Tensor fires = Fires(test_features, maxima, t);
    const torch::Tensor predicted = torch::matmul(fires, labels) > 0;  // (N, G)
    const torch::Tensor tp = predicted.logical_and(truth).sum(1);
    const torch::Tensor fp = predicted.logical_and(truth.logical_not()).sum(1);
    const torch::Tensor fn = predicted.logical_not().logical_and(truth).sum(1);
    const double tp_all = tp.sum().item<double>(),
                 errors = fp.sum().item<double>() + fn.sum().item<double>();
    const double micro =
        tp_all + errors > 0 ? 2 * tp_all / (2 * tp_all + errors) : 1.0;
    const torch::Tensor denominator = (2 * tp + fp + fn).to(torch::kDouble);
    const double per_board =
        torch::where(denominator > 0, 2 * tp.to(torch::kDouble) / denominator,
                     torch::ones_like(denominator))
            .mean()
            .item<double>();
    result.micro_f1_per_threshold.push_back(micro);
    if (micro > result.reconstruction_code) {
      result.reconstruction_code = micro;
      result.best_threshold_code = static_cast<int>(i);
    }
    if (per_board > result.reconstruction_paper) {
      result.reconstruction_paper = per_board;
      result.best_threshold_paper = static_cast<int>(i);
    }
  }
  return result;
}

}  // namespace sparse_layers::analysis
