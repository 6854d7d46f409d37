// Where a training step's time goes, per ATen operator: the legacy LibTorch
// profiler's push/pop ranges turned into self time (an op's time minus the
// ops it calls), so a matmul inside a Linear is counted once. The "profile
// first" of the speed issue: forward, backward (autograd nodes such as
// AddmmBackward0 around their kernels) and the optimiser, on one thread's
// events (CPU autograd runs on the calling thread; intra-op threads are not
// separate ranges).
#ifndef SPARSE_LAYERS_PIPELINES_TRAIN_OP_PROFILE_H_
#define SPARSE_LAYERS_PIPELINES_TRAIN_OP_PROFILE_H_

#include <functional>
#include <string>
#include <vector>

namespace sparse_layers::train {

struct OpTime {
  std::string name;
  double self_ms = 0;
  int64_t calls = 0;
};

struct OpProfile {
  double total_ms = 0;      // Sum of self times: the profiled work.
  std::vector<OpTime> ops;  // Descending self time.
};

// Runs `work` once under the profiler.
OpProfile ProfileOps(const std::function<void()>& work);

// "op  self ms  share  calls" lines for the `top` largest, then the rest.
std::string FormatOpProfile(const OpProfile& profile, int top);

}  // namespace sparse_layers::train

#endif  // SPARSE_LAYERS_PIPELINES_TRAIN_OP_PROFILE_H_
