// The LM's evaluation loss, shared by the trainer's validation and the
// analyses' CE with a layer spliced in; apart from replacement_metrics so the
// LM trainer links no replacement layer.
#ifndef SPARSE_LAYERS_PIPELINES_TRAIN_LM_EVALUATION_H_
#define SPARSE_LAYERS_PIPELINES_TRAIN_LM_EVALUATION_H_

#include "datasets/text/token_shards.h"
#include "models/gpt.h"

namespace sparse_layers::train {

// Mean next-token cross-entropy over the sampler's first `batches` evaluation
// batches (the trainer's validation loss and the frontier's CE: as the MxD
// released eval.py, the mean over batches of the per-token mean).
double MeanCrossEntropy(layers::GptImpl& model,
                        const datasets::BatchSampler& sampler, int batches);

}  // namespace sparse_layers::train

#endif  // SPARSE_LAYERS_PIPELINES_TRAIN_LM_EVALUATION_H_
