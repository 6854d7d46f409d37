// Sparse probing (Gurnee et al. 2023, SAEBench; MxD, arXiv:2505.21364
// Sec. 3.2.1 and App. B.5): per class, the top units by mean activation
// difference on the training texts, a one-feature class-balanced logistic
// regression each, and the best F1 on held-out texts. Game- and model-agnostic:
// features are any (texts, units) matrix.
#ifndef SPARSE_LAYERS_ANALYSIS_PROBING_SPARSE_PROBING_H_
#define SPARSE_LAYERS_ANALYSIS_PROBING_SPARSE_PROBING_H_

#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace sparse_layers::analysis {

// The `count` units with the largest mean(positive) - mean(negative), signed
// (the released probe_global.py), largest first. features: (n, units);
// labels: (n) bool.
std::vector<int64_t> TopUnitsByMeanDifference(const torch::Tensor& features,
                                              const torch::Tensor& labels,
                                              int64_t count);

struct LogisticFit {
  double weight = 0;
  double bias = 0;
};

// One-feature logistic regression as sklearn's LogisticRegression(
// class_weight='balanced', penalty='l2', C): minimises
// 0.5 w^2 + C sum_i s_i log(1 + exp(-t_i (w x_i + b))), t_i = +-1, sample
// weights s_i = n / (2 n_class), intercept unpenalised; Newton's method in
// float64.
LogisticFit FitBalancedLogistic(const torch::Tensor& x,
                                const torch::Tensor& labels, double c = 1.0);

// Predictions w x + b > 0.
torch::Tensor Predict(const LogisticFit& fit, const torch::Tensor& x);

// Binary F1 of the positive class (0 when there are no true positives).
double F1Score(const torch::Tensor& predicted, const torch::Tensor& truth);
// Mean of the true-positive and true-negative rates.
double BalancedAccuracy(const torch::Tensor& predicted,
                        const torch::Tensor& truth);

struct ProbeOutcome {
  // The paper's protocol: the best test F1 over the candidate units (the unit
  // is chosen on the test split, as in the released script).
  int64_t best_unit = -1;
  double best_f1 = 0;
  double best_balanced_accuracy = 0;
  // Leakage-free variant: the unit with the best F1 on a validation part of
  // the training texts, scored once on test.
  int64_t selected_unit = -1;
  double selected_f1 = 0;
};

// One one-vs-all task. Candidates are chosen on `fit` rows (top `candidates`
// by mean difference); each is fitted on `fit` rows, the leakage-free choice
// is made on `validation` rows, and both variants are scored on `test` rows.
ProbeOutcome ProbeOneClass(const torch::Tensor& fit_features,
                           const torch::Tensor& fit_labels,
                           const torch::Tensor& validation_features,
                           const torch::Tensor& validation_labels,
                           const torch::Tensor& test_features,
                           const torch::Tensor& test_labels,
                           int64_t candidates = 100);

// One unit's activations on positive and negative texts (MxD Figs. 14-15 and
// 17): `bins` equal bins over the range of `values` (both classes), each
// class's share of its texts per bin (its shares sum to 1; all zero for a
// class without texts).
struct ClassDensities {
  std::vector<double> centres, positive, negative;
};
ClassDensities UnitClassDensities(const torch::Tensor& values,
                                  const torch::Tensor& positive, int bins);

}  // namespace sparse_layers::analysis

#endif  // SPARSE_LAYERS_ANALYSIS_PROBING_SPARSE_PROBING_H_
