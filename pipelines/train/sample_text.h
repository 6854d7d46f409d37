// A training summary's sample continuation as text. The trainer records only
// token ids (it links no tokenizer, so tokenizer code never changes its digest
// and so never retrains a cached model); this decodes them afterwards.
#ifndef SPARSE_LAYERS_PIPELINES_TRAIN_SAMPLE_TEXT_H_
#define SPARSE_LAYERS_PIPELINES_TRAIN_SAMPLE_TEXT_H_

#include <string>

#include "absl/status/statusor.h"
#include "datasets/text/tokenizer.h"
#include "pipelines/train/training.pb.h"

namespace sparse_layers::train {

// "<prompt>|<continuation>\n", or a line saying the run drew no sample
// (eval.sample_tokens 0). An id outside the tokenizer's vocabulary is an
// error naming it: the summary is of a model with another vocabulary.
absl::StatusOr<std::string> SampleText(const TrainingSummary& summary,
                                       const datasets::Tokenizer& tokenizer);

}  // namespace sparse_layers::train

#endif  // SPARSE_LAYERS_PIPELINES_TRAIN_SAMPLE_TEXT_H_
