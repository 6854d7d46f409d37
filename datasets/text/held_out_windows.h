// The held-out sample analysis tools read: a token split's evaluation windows
// (BatchSampler's evaluation batch of `count` windows: deterministic, spread
// over the split), as one row-major id block.
#ifndef SPARSE_LAYERS_DATASETS_TEXT_HELD_OUT_WINDOWS_H_
#define SPARSE_LAYERS_DATASETS_TEXT_HELD_OUT_WINDOWS_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "datasets/text/token_shards.h"

namespace sparse_layers::datasets {

struct HeldOutWindows {
  int count = 0;   // Windows: the asked-for count, or fewer in a short split.
  int length = 0;  // Tokens per window.
  std::vector<int64_t> ids;  // count * length, row-major.
};

// Up to `count` windows of `length` tokens; an error when the split holds
// none.
absl::StatusOr<HeldOutWindows> ReadHeldOutWindows(const TokenShardSet& tokens,
                                                  int count, int length);

}  // namespace sparse_layers::datasets

#endif  // SPARSE_LAYERS_DATASETS_TEXT_HELD_OUT_WINDOWS_H_
