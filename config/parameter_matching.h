// Choosing the MxD expert count N so that an MxD has a Transcoder's parameter
// count (MxD, arXiv:2505.21364 Sec. 3.1, Table 2; the released code's
// train_gpt2.py formula and the exact one).
#ifndef SPARSE_LAYERS_CONFIG_PARAMETER_MATCHING_H_
#define SPARSE_LAYERS_CONFIG_PARAMETER_MATCHING_H_

#include <cstdint>

namespace sparse_layers::config {

// Parameters of a Transcoder: I*H_tc + H_tc + H_tc*O + O.
int64_t TranscoderParameters(int64_t d_in, int64_t d_out, int64_t width);

// Parameters of an MxD: I*H + H + H*O + O + N*(I + O + 1), plus I*H + H for
// the SwiGLU branch.
int64_t MxdParameters(int64_t d_in, int64_t d_out, int64_t hidden,
                      int64_t experts, bool swiglu);

enum class MatchingFormula {
  // The released code's rounding (its MLP formula subtracts H_tc where H is
  // meant); gives the paper's N = 21,490 for GPT-2.
  kReleasedCode,
  // The exact solution of MxdParameters(N) = TranscoderParameters.
  kExact,
};

int64_t MxdExpertsMatchingTranscoder(int64_t d_in, int64_t d_out,
                                     int64_t hidden, int64_t transcoder_width,
                                     bool swiglu, MatchingFormula formula);

// The low-rank CP-MoE baseline (MxD, arXiv:2505.21364 App. B.4.1, Eq. 22):
// the MxD GELU encoder (I H + H), gate (N (I + 1)), rank-R factors
// U1 (N, R), U2 (H, R), U3 (R, O) and the output bias O.
int64_t CpMoeParameters(int64_t d_in, int64_t d_out, int64_t hidden,
                        int64_t rank, int64_t experts);

// Decoder rank R at normalised rank R / min(H, O) = `fraction` (the x axis of
// Fig. 12 of arXiv:2505.21364): rounded, at least 1.
int64_t CpMoeRank(int64_t hidden, int64_t d_out, double fraction);

// The largest N whose CP-MoE fits a Transcoder's parameters (App. B.4.1 keeps
// the budget and varies N): (P - (I H + H + H R + R O + O)) / (I + 1 + R).
int64_t CpMoeExpertsMatchingTranscoder(int64_t d_in, int64_t d_out,
                                       int64_t hidden, int64_t rank,
                                       int64_t transcoder_width);

}  // namespace sparse_layers::config

#endif  // SPARSE_LAYERS_CONFIG_PARAMETER_MATCHING_H_
