#include "pipelines/train/lm_evaluation.h"

#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace sparse_layers::train {

double MeanCrossEntropy(layers::GptImpl& model,
                        const datasets::BatchSampler& sampler, int batches) {
  torch::NoGradGuard no_grad;
  const bool was_training = model.is_training();
  model.eval();
  double total = 0;
  for (int i = 0; i < batches; ++i) {
    datasets::TokenBatch batch = sampler.EvalBatch(i, batches);
    const auto tensor = [&](std::vector<int64_t>& ids) {
      return torch::from_blob(
          ids.data(), {batch.batch_size, batch.sequence_length}, torch::kLong);
    };
    total += model.CrossEntropy(tensor(batch.inputs), tensor(batch.targets))
                 .item<double>();
  }
  model.train(was_training);
  return total / batches;
}

}  // namespace sparse_layers::train
