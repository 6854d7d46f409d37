#include "analysis/probing/sparse_probing.h"

#include <algorithm>
#include <cmath>

namespace sparse_layers::analysis {

std::vector<int64_t> TopUnitsByMeanDifference(const torch::Tensor& features,
                                              const torch::Tensor& labels,
                                              int64_t count) {
  const torch::Tensor f = features.to(torch::kDouble);
  const torch::Tensor positive = labels.to(torch::kBool);
  const int64_t n = positive.numel();
  const int64_t n_positive = positive.sum().item<int64_t>();
  // mean(positive) - mean(negative) as one weighted sum over the rows (no
  // per-class copies of the features); NaN when a class has no rows.
  const torch::Tensor difference =
      n_positive == 0 || n_positive == n
          ? torch::full({f.size(1)}, std::nan(""), f.options())
          : torch::where(positive,
                         torch::full({}, 1.0 / n_positive, f.options()),
                         torch::full({}, -1.0 / (n - n_positive), f.options()))
                .matmul(f);
  count = std::min<int64_t>(count, difference.size(0));
  const torch::Tensor order = std::get<1>(difference.topk(count));
  return std::vector<int64_t>(order.data_ptr<int64_t>(),
                              order.data_ptr<int64_t>() + count);
}

LogisticFit FitBalancedLogistic(const torch::Tensor& x,
                                const torch::Tensor& labels, double c) {
  const torch::Tensor xs = x.to(torch::kDouble).contiguous();
  const torch::Tensor ys = labels.to(torch::kBool).contiguous();
  const double* values = xs.data_ptr<double>();
  const bool* positive = ys.data_ptr<bool>();
  const int64_t n = xs.numel();
  int64_t n_positive = 0;
  for (int64_t i = 0; i < n; ++i) n_positive += positive[i];
  if (n_positive == 0 || n_positive == n) return {};
  const double weight_positive = n / (2.0 * n_positive);
  const double weight_negative = n / (2.0 * (n - n_positive));
  double w = 0, b = 0;
  for (int iteration = 0; iteration < 100; ++iteration) {
    // Gradient and Hessian of 0.5 w^2 + C sum s_i softplus(-t_i z_i).
    double gw = w, gb = 0, hww = 1, hwb = 0, hbb = 1e-12;
    for (int64_t i = 0; i < n; ++i) {
      const double t = positive[i] ? 1.0 : -1.0;
      const double s = c * (positive[i] ? weight_positive : weight_negative);
      const double z = w * values[i] + b;
      const double p = 1.0 / (1.0 + std::exp(t * z));  // sigma(-t z)
      const double g = -s * t * p;
      const double h = s * p * (1.0 - p);
      gw += g * values[i];
      gb += g;
      hww += h * values[i] * values[i];
      hwb += h * values[i];
      hbb += h;
    }
    const double det = hww * hbb - hwb * hwb;
    if (!(det > 0)) break;
    const double dw = (hbb * gw - hwb * gb) / det;
    const double db = (hww * gb - hwb * gw) / det;
    w -= dw;
    b -= db;
    if (std::abs(dw) + std::abs(db) < 1e-10 * (1 + std::abs(w) + std::abs(b))) {
      break;
    }
  }
  return {w, b};
}

torch::Tensor Predict(const LogisticFit& fit, const torch::Tensor& x) {
  return x.to(torch::kDouble) * fit.weight + fit.bias > 0;
}

double F1Score(const torch::Tensor& predicted, const torch::Tensor& truth) {
  const torch::Tensor p = predicted.to(torch::kBool);
  const torch::Tensor t = truth.to(torch::kBool);
  const double tp = (p & t).sum().item<double>();
  const double fp = (p & ~t).sum().item<double>();
  const double fn = (~p & t).sum().item<double>();
  return tp > 0 ? 2 * tp / (2 * tp + fp + fn) : 0.0;
}

double BalancedAccuracy(const torch::Tensor& predicted,
                        const torch::Tensor& truth) {
  const torch::Tensor p = predicted.to(torch::kBool);
  const torch::Tensor t = truth.to(torch::kBool);
  const double positives = t.sum().item<double>();
  const double negatives = (~t).sum().item<double>();
  const double tpr =
      positives > 0 ? (p & t).sum().item<double>() / positives : 0;
  const double tnr =
      negatives > 0 ? (~p & ~t).sum().item<double>() / negatives : 0;
  return 0.5 * (tpr + tnr);
}

ProbeOutcome ProbeOneClass(const torch::Tensor& fit_features,
                           const torch::Tensor& fit_labels,
                           const torch::Tensor& validation_features,
                           const torch::Tensor& validation_labels,
                           const torch::Tensor& test_features,
                           const torch::Tensor& test_labels,
                           int64_t candidates) {
  ProbeOutcome outcome;
  double best_validation = -1;
  for (int64_t unit :
       TopUnitsByMeanDifference(fit_features, fit_labels, candidates)) {
    const LogisticFit fit =
        FitBalancedLogistic(fit_features.select(1, unit), fit_labels);
    const torch::Tensor test_predicted =
        Predict(fit, test_features.select(1, unit));
    const double test_f1 = F1Score(test_predicted, test_labels);
    if (test_f1 > outcome.best_f1 || outcome.best_unit < 0) {
      outcome.best_unit = unit;
      outcome.best_f1 = test_f1;
      outcome.best_balanced_accuracy =
          BalancedAccuracy(test_predicted, test_labels);
    }
    const double validation_f1 = F1Score(
        Predict(fit, validation_features.select(1, unit)), validation_labels);
    if (validation_f1 > best_validation) {
      best_validation = validation_f1;
      outcome.selected_unit = unit;
      outcome.selected_f1 = test_f1;
    }
  }
  return outcome;
}

ClassDensities UnitClassDensities(const torch::Tensor& values,
                                  const torch::Tensor& positive, int bins) {
  const torch::Tensor v = values.to(torch::kDouble).flatten();
  const torch::Tensor is_positive = positive.to(torch::kBool).flatten();
  const double low = v.min().item<double>(), high = v.max().item<double>();
  // A constant unit puts every text in the middle bin of a unit-wide range.
  const double width = high > low ? (high - low) / bins : 1.0 / bins;
  const double start = high > low ? low : low - 0.5;
  const torch::Tensor bin =
      ((v - start) / width).floor().clamp(0, bins - 1).to(torch::kLong);
  ClassDensities densities;
  for (int b = 0; b < bins; ++b) {
    densities.centres.push_back(start + (b + 0.5) * width);
  }
  for (const bool side : {true, false}) {
    const torch::Tensor in_class = side ? is_positive : ~is_positive;
    const int64_t count = in_class.sum().item<int64_t>();
    const torch::Tensor counts =
        torch::bincount(bin.masked_select(in_class), {}, bins)
            .to(torch::kDouble);
    std::vector<double>& shares =
        side ? densities.positive : densities.negative;
    for (int b = 0; b < bins; ++b) {
      shares.push_back(count > 0 ? counts[b].item<double>() / count : 0.0);
    }
  }
  return densities;
}

}  // namespace sparse_layers::analysis
