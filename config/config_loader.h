// Loads ExperimentConfig text protos. Every error is one line that starts with
// file:line:column and names the offending field, so a typo in a config points
// straight at itself (a rule for every config in the project).
#ifndef SPARSE_LAYERS_CONFIG_CONFIG_LOADER_H_
#define SPARSE_LAYERS_CONFIG_CONFIG_LOADER_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "config/experiment.pb.h"

namespace sparse_layers::config {

// Parses `text` (named `source_name` in errors) as an ExperimentConfig and
// validates it.
absl::StatusOr<ExperimentConfig> ParseExperimentConfig(
    absl::string_view text, absl::string_view source_name);

// Reads and merges the files in order (later files override scalar fields of
// earlier ones, so a scale file can refine a base file), then validates the
// result. Errors name the file where the field was written.
absl::StatusOr<ExperimentConfig> LoadExperimentConfig(
    absl::Span<const std::string> paths);

// The windows a model trains on: data.sequence_length, else its whole context.
// Analyses read held-out text in the same windows.
int TrainingWindowLength(const ExperimentConfig& config);

}  // namespace sparse_layers::config

#endif  // SPARSE_LAYERS_CONFIG_CONFIG_LOADER_H_
