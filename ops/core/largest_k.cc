#include "ops/core/largest_k.h"

#include <ATen/Parallel.h>
#include <ATen/record_function.h>

#include <cstdint>
#include <mutex>
#include <vector>

#include "ops/core/float_lanes.h"

namespace sparse_layers::layers {
namespace {

constexpr int64_t kMaxK = 32;

// One row's k largest, falling, while no two of the candidates seen are equal
// and no NaN is met (then ATen's answer is the only one; otherwise the row is
// refused and goes to ATen).
class RowBest {
 public:
  RowBest(float* values, int64_t* indices, int64_t k)
      : values_(values), indices_(indices), k_(k) {}

  // x enters if it beats the k-th (size_ < k_: always); false on a tie or NaN.
  bool Offer(float x, int64_t i) {
    if (x != x) return false;
    int64_t p = size_ < k_ ? size_ : k_ - 1;
    if (size_ == k_) {
      if (x == values_[k_ - 1]) return false;
      if (!(x > values_[k_ - 1])) return true;
    }
    for (; p > 0 && x > values_[p - 1]; --p) {
      values_[p] = values_[p - 1];
      indices_[p] = indices_[p - 1];
    }
    if (p > 0 && x == values_[p - 1]) return false;
    values_[p] = x;
    indices_[p] = i;
    if (size_ < k_) ++size_;
    return true;
  }

  float last() const { return values_[k_ - 1]; }

 private:
  float* values_;
  int64_t* indices_;
  int64_t k_, size_ = 0;
};

// False when the row is refused (a tie or NaN decides ATen's answer).
bool LargestKOfRow(const float* v, int64_t n, int64_t k, float* values,
                   int64_t* indices) {
  RowBest best(values, indices, k);
  int64_t i = 0;
  for (; i < k; ++i) {
    if (!best.Offer(v[i], i)) return false;
  }
  // Four at a time: a group with nothing at or above the k-th, and no NaN
  // (x != x), is one compare and one branch, almost always not taken.
  for (; i + 4 <= n; i += 4) {
    const float last = best.last();
    const FloatLanes lasts = BroadcastLanes(last);
    const FloatLanes x = LoadLanes(v + i);
    if (!AnyLane((x >= lasts) | (x != x))) continue;
    for (int64_t j = i; j < i + 4; ++j) {
      if (!best.Offer(v[j], j)) return false;
    }
  }
  for (; i < n; ++i) {
    if (!best.Offer(v[i], i)) return false;
  }
  return true;
}

}  // namespace

std::tuple<torch::Tensor, torch::Tensor> LargestK(const torch::Tensor& x,
                                                  int64_t k, bool sorted,
                                                  int64_t* aten_rows) {
  const int64_t n = x.dim() > 0 ? x.size(-1) : 0;
  if (!x.device().is_cpu() || x.scalar_type() != torch::kFloat || k < 1 ||
      k > kMaxK || k > n || !(sorted || 64 * k <= n)) {
    if (aten_rows != nullptr) *aten_rows = n > 0 ? x.numel() / n : 0;
    return x.topk(k, -1, /*largest=*/true, sorted);
  }
  // A named range: op profiles see this pass, which is no ATen op.
  RECORD_FUNCTION("LargestK", std::vector<c10::IValue>());
  const torch::Tensor rows = x.reshape({-1, n}).contiguous();
  const int64_t count = rows.size(0);
  torch::Tensor values = torch::empty({count, k}, rows.options());
  torch::Tensor indices =
      torch::empty({count, k}, rows.options().dtype(torch::kLong));
  const float* in = rows.data_ptr<float>();
  float* out_values = values.data_ptr<float>();
  int64_t* out_indices = indices.data_ptr<int64_t>();
  std::vector<int64_t> refused;
  std::mutex refused_mutex;
  at::parallel_for(0, count, 16, [&](int64_t begin, int64_t end) {
    std::vector<int64_t> mine;
    for (int64_t r = begin; r < end; ++r) {
      if (!LargestKOfRow(in + r * n, n, k, out_values + r * k,
                         out_indices + r * k)) {
        mine.push_back(r);
      }
    }
    if (mine.empty()) return;
    std::lock_guard<std::mutex> lock(refused_mutex);
    refused.insert(refused.end(), mine.begin(), mine.end());
  });
  if (aten_rows != nullptr) *aten_rows = static_cast<int64_t>(refused.size());
  if (!refused.empty()) {
    // ATen's own answer for those rows (its per-row algorithm does not depend
    // on the other rows).
    const torch::Tensor which = torch::tensor(refused, torch::kLong);
    const auto [aten_values, aten_indices] =
        rows.index_select(0, which).topk(k, -1, /*largest=*/true, sorted);
    values.index_copy_(0, which, aten_values);
    indices.index_copy_(0, which, aten_indices);
  }
  auto shape = x.sizes().vec();
  shape.back() = k;
  return {values.view(shape), indices.view(shape)};
}

}  // namespace sparse_layers::layers
