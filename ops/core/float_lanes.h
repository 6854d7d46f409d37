#ifndef SPARSE_LAYERS_OPS_CORE_FLOAT_LANES_H_
#define SPARSE_LAYERS_OPS_CORE_FLOAT_LANES_H_

// Four float lanes in one SSE register (the baseline ISA), through GCC vector
// extensions: the branch-free kernels of ops/core and layers/ffn share these
// so that each lane adds and compares in a fixed order on every machine.

#if defined(__SSE__)
#include <xmmintrin.h>
#endif

#include <cstdint>
#include <cstring>

namespace sparse_layers::layers {

typedef float FloatLanes __attribute__((vector_size(16)));
// A lane-wise comparison's result: all ones (-1) where true, 0 where false.
typedef int32_t LaneMasks __attribute__((vector_size(16)));
constexpr int64_t kLanes = 4;

// Unaligned: rows of a tensor start anywhere.
inline FloatLanes LoadLanes(const float* p) {
  FloatLanes v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

inline FloatLanes BroadcastLanes(float x) { return FloatLanes{x, x, x, x}; }

inline bool AnyLane(LaneMasks m) {
#if defined(__SSE__)
  return _mm_movemask_ps(reinterpret_cast<__m128>(m)) != 0;
#else
  return (m[0] | m[1] | m[2] | m[3]) != 0;
#endif
}

// Lane-wise m ? a : b for masks of all ones or zeros, by and / andnot / or
// (the vector ?: would compare m with zero again first).
inline LaneMasks SelectLanes(LaneMasks m, LaneMasks a, LaneMasks b) {
  return (m & a) | (~m & b);
}

inline FloatLanes SelectLanes(LaneMasks m, FloatLanes a, FloatLanes b) {
  return reinterpret_cast<FloatLanes>(SelectLanes(
      m, reinterpret_cast<LaneMasks>(a), reinterpret_cast<LaneMasks>(b)));
}

// x > y ? x : y and y < x ? y : x lane-wise: one maxps / minps each on x86
// (whose definitions these are, signed zeros and NaN included).
inline FloatLanes LargerLanes(FloatLanes x, FloatLanes y) {
#if defined(__SSE__)
  return _mm_max_ps(x, y);
#else
  return SelectLanes(x > y, x, y);
#endif
}

inline FloatLanes SmallerLanes(FloatLanes y, FloatLanes x) {
#if defined(__SSE__)
  return _mm_min_ps(y, x);
#else
  return SelectLanes(y < x, y, x);
#endif
}

}  // namespace sparse_layers::layers

#endif  // SPARSE_LAYERS_OPS_CORE_FLOAT_LANES_H_
