// Features as binary classifiers of board-state properties (BSPs): coverage
// and board reconstruction as in MoE-X App. B.2-B.3 and as in Karvonen et
// al.'s evaluation code (adamkarvonen/SAE_BoardGameEval). Game-agnostic:
// features are (positions, F) activations, properties (positions, G) 0/1
// labels.
#ifndef SPARSE_LAYERS_ANALYSIS_BSP_FEATURE_CLASSIFIERS_H_
#define SPARSE_LAYERS_ANALYSIS_BSP_FEATURE_CLASSIFIERS_H_

#include <torch/torch.h>

#include <vector>

namespace sparse_layers::analysis {

// t in {0.0, 0.1, ..., 1.0} (torch.arange(0, 1.1, 0.1) in the code).
std::vector<double> DefaultThresholds();

// Per-feature maximum |activation| over `activations` (N, F); features whose
// maximum is 0 never fire and are dropped by the metrics ("dead").
torch::Tensor FeatureMaxima(const torch::Tensor& activations);

struct CoverageResult {
  // Karvonen's code: one threshold for all BSPs, max_t mean_g max_f F1.
  double coverage_code = 0;
  int best_threshold_code = 0;  // Index into the thresholds.
  // The paper's formula: mean_g max_t max_f F1 (>= coverage_code).
  double coverage_paper = 0;
  std::vector<double> mean_best_f1_per_threshold;  // mean_g max_f F1(t).
  int64_t live_features = 0;
};

// phi_{f,t}(x) = 1[f(x) > t * max_f]; F1 per (t, f, g) from TP = A_t^T G.
CoverageResult Coverage(const torch::Tensor& features,
                        const torch::Tensor& maxima,
                        const torch::Tensor& properties,
                        const std::vector<double>& thresholds);

struct LabellingRule {
  double min_precision = 0.95;      // App. B.3.
  int64_t min_true_positives = 10;  // The code's significance threshold.
};

// (F, G) 0/1: feature f at threshold t is a high-precision classifier of g
// on the training positions.
torch::Tensor HighPrecisionLabels(const torch::Tensor& features,
                                  const torch::Tensor& maxima,
                                  const torch::Tensor& properties, double t,
                                  const LabellingRule& rule);

struct ReconstructionResult {
  // The code: micro-F1 over all test positions and properties, at the
  // threshold that maximises it on the test set.
  double reconstruction_code = 0;
  int best_threshold_code = 0;
  // The paper: mean over test boards of each board's F1, max over t (a board
  // with neither predicted nor true properties scores 1).
  double reconstruction_paper = 0;
  int best_threshold_paper = 0;
  std::vector<double> micro_f1_per_threshold;
};

// Labels from the training positions, predictions on the test positions:
// property g is predicted when any feature labelled with g fires.
ReconstructionResult Reconstruction(const torch::Tensor& train_features,
                                    const torch::Tensor& train_properties,
                                    const torch::Tensor& test_features,
                                    const torch::Tensor& test_properties,
                                    const torch::Tensor& maxima,
                                    const std::vector<double>& thresholds,
                                    const LabellingRule& rule);

}  // namespace sparse_layers::analysis

#endif  // SPARSE_LAYERS_ANALYSIS_BSP_FEATURE_CLASSIFIERS_H_
