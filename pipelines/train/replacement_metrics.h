// Metrics of sparse replacement layers (MxD, arXiv:2505.21364 Sec. 3 and
// Apps. B-C): normalised MSE lives in layers/replacement/nmse.h,
// these are the rest, each checked on hand-computed cases in the test.
#ifndef SPARSE_LAYERS_PIPELINES_TRAIN_REPLACEMENT_METRICS_H_
#define SPARSE_LAYERS_PIPELINES_TRAIN_REPLACEMENT_METRICS_H_

#include <torch/torch.h>

#include <cstdint>

#include "datasets/text/token_shards.h"
#include "layers/attention/lorsa.h"
#include "layers/replacement/sparse_replacement.h"
#include "models/gpt.h"
#include "ops/core/topk.h"
#include "pipelines/activations/activation_shards.h"
#include "pipelines/train/lm_evaluation.h"

namespace sparse_layers::train {

// Firing counts of every unit over a stream of top-k codes (a unit fires on a
// row when its kept value is > 0; as the MxD released code counts firing for
// arXiv:2505.21364 App. C.1).
class FiringCounter {
 public:
  explicit FiringCounter(int64_t units);
  void Add(const layers::TopKCodes& codes);
  int64_t rows() const { return rows_; }
  // Mean number of firing units per row.
  double L0() const;
  // Share of units whose firing frequency is below `threshold` (the released
  // code's dead rule: < 1e-8 over a window, i.e. never fired here).
  double DeadFraction(double threshold = 1e-8) const;
  // Per-unit firing frequency (count / rows), float64.
  torch::Tensor Frequencies() const;

 private:
  torch::Tensor counts_;  // (units) int64.
  int64_t rows_ = 0;
  int64_t active_ = 0;
};

// Pooled fraction of variance unexplained over streamed rows (the FVU of Lorsa,
// arXiv:2504.20938 Sec. 4):
// sum_i ||y_i - y_hat_i||^2 / sum_i ||y_i - y_bar||^2, y_bar the mean row;
// float64 sums, so the rows can come in chunks.
class FvuAccumulator {
 public:
  void Add(const torch::Tensor& target, const torch::Tensor& prediction);
  double Value() const;
  int64_t rows() const { return rows_; }

 private:
  double squared_error_ = 0;
  double squared_norm_ = 0;
  torch::Tensor sum_;  // (d) float64.
  int64_t rows_ = 0;
};

// A replacement layer scored on cached activations (its fixed K).
struct ActivationFit {
  // The released code's normalised MSE (MxD arXiv:2505.21364 Sec. 3.1), which
  // scales with ||y||, and the scale-free sum ||y_hat - y||^2 / sum ||y||^2.
  double nmse = 0;
  double relative_mse = 0;
  double l0 = 0;
  double dead_fraction = 0;
  double fvu = 0;  // Pooled FVU (the Lorsa paper's reconstruction metric).
};

// On the first `rows` rows of `data`, `chunk` rows at a time; the layer reads
// the cached FFN output instead of its input when `on_output` (an SAE).
ActivationFit EvaluateOnActivations(layers::SparseReplacementImpl& layer,
                                    const datasets::ActivationSet& data,
                                    bool on_output, int64_t rows,
                                    int64_t chunk);

// A Lorsa layer on the first `windows` whole windows of an attention cache
// (`length` rows each), `chunk` windows at a time: nmse holds the pooled FVU
// as well; l0 counts heads with z != 0; dead heads never have z != 0. A Lorsa
// still in training on normalised activations reads x * input_scale and its
// output is divided by output_scale.
ActivationFit EvaluateLorsaOnActivations(layers::LorsaImpl& lorsa,
                                         const datasets::ActivationSet& data,
                                         int64_t length, int64_t windows,
                                         int64_t chunk,
                                         double input_scale = 1.0,
                                         double output_scale = 1.0);

// (CE_zero - CE_replaced) / (CE_zero - CE_base): 1 when the replacement is as
// good as the original layer, 0 when it is as bad as deleting it (the MxD
// released code's CE score, "CE recovered").
double CeRecovered(double base, double zero_ablated, double replaced);

// rank(W) / min(rows, cols) with the singular-value tolerance of
// torch.linalg.matrix_rank (max(rows, cols) * eps(float) * sigma_max), in
// float64 (MxD Eq. 23).
double NormalisedRank(const torch::Tensor& matrix);

}  // namespace sparse_layers::train

#endif  // SPARSE_LAYERS_PIPELINES_TRAIN_REPLACEMENT_METRICS_H_
