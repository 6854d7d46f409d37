#include "config/parameter_matching.h"

#include <algorithm>
#include <cmath>

namespace sparse_layers::config {

int64_t TranscoderParameters(int64_t d_in, int64_t d_out, int64_t width) {
  return d_in * width + width + width * d_out + d_out;
}

int64_t MxdParameters(int64_t d_in, int64_t d_out, int64_t hidden,
                      int64_t experts, bool swiglu) {
  return d_in * hidden + hidden + hidden * d_out + d_out +
         experts * (d_in + d_out + 1) + (swiglu ? d_in * hidden + hidden : 0);
}

int64_t MxdExpertsMatchingTranscoder(int64_t d_in, int64_t d_out,
                                     int64_t hidden, int64_t transcoder_width,
                                     bool swiglu, MatchingFormula formula) {
  const int64_t budget = TranscoderParameters(d_in, d_out, transcoder_width);
  const double per_expert = static_cast<double>(d_in + d_out + 1);
  if (swiglu) {
    // Code's GLU formula: floor((P_TC - (2 H (I + 1) + O (H + 1))) / (I + O +
    // 1)).
    return static_cast<int64_t>(
        std::floor((budget - (2 * hidden * (d_in + 1) + d_out * (hidden + 1))) /
                   per_expert));
  }
  if (formula == MatchingFormula::kReleasedCode) {
    return std::llround(
        (budget - (hidden * d_out + d_in * hidden + transcoder_width + d_out)) /
        per_expert);
  }
  return static_cast<int64_t>(std::floor(
      (budget - MxdParameters(d_in, d_out, hidden, 0, false)) / per_expert));
}

int64_t CpMoeParameters(int64_t d_in, int64_t d_out, int64_t hidden,
                        int64_t rank, int64_t experts) {
  return d_in * hidden + hidden + hidden * rank + rank * d_out + d_out +
         experts * (d_in + 1 + rank);
}

int64_t CpMoeRank(int64_t hidden, int64_t d_out, double fraction) {
  return std::max<int64_t>(
      1, std::llround(fraction * static_cast<double>(std::min(hidden, d_out))));
}

int64_t CpMoeExpertsMatchingTranscoder(int64_t d_in, int64_t d_out,
                                       int64_t hidden, int64_t rank,
                                       int64_t transcoder_width) {
  const int64_t budget = TranscoderParameters(d_in, d_out, transcoder_width);
  return (budget - CpMoeParameters(d_in, d_out, hidden, rank, 0)) /
         (d_in + 1 + rank);
}

}  // namespace sparse_layers::config
