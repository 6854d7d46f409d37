#include "datasets/text/held_out_windows.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/common/status_macros.h"

namespace sparse_layers::datasets {

absl::StatusOr<HeldOutWindows> ReadHeldOutWindows(const TokenShardSet& tokens,
                                                  int count, int length) {
  ASSIGN_OR_RETURN(const BatchSampler probe,
                   BatchSampler::Create(&tokens, 1, length, 1));
  HeldOutWindows windows;
  windows.length = length;
  windows.count =
      static_cast<int>(std::min<int64_t>(count, probe.EvalWindowCount()));
  if (windows.count < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("the token split holds no window of ", length, " tokens"));
  }
  ASSIGN_OR_RETURN(const BatchSampler sampler,
                   BatchSampler::Create(&tokens, windows.count, length, 1));
  windows.ids = sampler.EvalBatch(0, 1).inputs;
  return windows;
}

}  // namespace sparse_layers::datasets
