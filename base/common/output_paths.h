// An output path that names one of the run's inputs would overwrite that input
// (an atomic rename replaces it): refused before any work, for every binary
// that takes an output path beside input paths.
#ifndef SPARSE_LAYERS_BASE_COMMON_OUTPUT_PATHS_H_
#define SPARSE_LAYERS_BASE_COMMON_OUTPUT_PATHS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace sparse_layers {

// OK unless `output` resolves (symbolic links, "." and "..") to the same file
// as one of `inputs`; else "<what> <output> is also an input (<input>); write
// it elsewhere". Empty paths are ignored.
absl::Status OutputIsNotAnInput(absl::string_view what,
                                const std::string& output,
                                const std::vector<std::string>& inputs);

}  // namespace sparse_layers

#endif  // SPARSE_LAYERS_BASE_COMMON_OUTPUT_PATHS_H_
