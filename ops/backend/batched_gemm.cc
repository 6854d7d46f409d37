#include "ops/backend/batched_gemm.h"

#include <ATen/Parallel.h>
#include <cblas.h>

#include <algorithm>
#include <cstdint>
#include <limits>

namespace sparse_layers::layers {
namespace {

// One operand as BLAS reads it: the first entry's pointer, the leading
// dimension, the distance between entries and whether it is transposed.
template <typename T>
struct Operand {
  torch::Tensor storage;  // keeps a copied layout alive
  const T* data;
  int64_t leading;
  int64_t batch_stride;
  CBLAS_TRANSPOSE transpose;
};

template <typename T>
Operand<T> Describe(const torch::Tensor& x) {
  const int64_t rows = x.size(1), cols = x.size(2);
  if (x.stride(2) == 1 && x.stride(1) >= std::max<int64_t>(1, cols)) {
    return {x, x.data_ptr<T>(), x.stride(1), x.stride(0), CblasNoTrans};
  }
  if (x.stride(1) == 1 && x.stride(2) >= std::max<int64_t>(1, rows)) {
    return {x, x.data_ptr<T>(), x.stride(2), x.stride(0), CblasTrans};
  }
  const torch::Tensor copy = x.contiguous();
  return {copy, copy.data_ptr<T>(), std::max<int64_t>(1, cols), rows * cols,
          CblasNoTrans};
}

void Gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k,
          double alpha, const float* a, int lda, const float* b, int ldb,
          double beta, float* c, int ldc) {
  cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, static_cast<float>(alpha), a, lda,
              b, ldb, static_cast<float>(beta), c, ldc);
}

void Gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k,
          double alpha, const double* a, int lda, const double* b, int ldb,
          double beta, double* c, int ldc) {
  cblas_dgemm(CblasRowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c,
              ldc);
}

bool FitsInt(int64_t value) { return value <= std::numeric_limits<int>::max(); }

template <typename T>
void Run(const torch::Tensor& a, const torch::Tensor& b, double alpha,
         double beta, const torch::Tensor& c) {
  const int64_t batch = a.size(0), m = a.size(1), k = a.size(2), p = b.size(2);
  const Operand<T> left = Describe<T>(a);
  const Operand<T> right = Describe<T>(b);
  TORCH_CHECK(FitsInt(m) && FitsInt(p) && FitsInt(k) && FitsInt(left.leading) &&
                  FitsInt(right.leading) && FitsInt(c.stride(1)),
              "BatchedGemm: a dimension exceeds BLAS's int range");
  T* const out = c.data_ptr<T>();
  const int64_t out_stride = c.stride(0), out_leading = c.stride(1);
  at::parallel_for(0, batch, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      Gemm(left.transpose, right.transpose, static_cast<int>(m),
           static_cast<int>(p), static_cast<int>(k), alpha,
           left.data + i * left.batch_stride, static_cast<int>(left.leading),
           right.data + i * right.batch_stride, static_cast<int>(right.leading),
           beta, out + i * out_stride, static_cast<int>(out_leading));
    }
  });
}

}  // namespace

void BatchedGemm(const torch::Tensor& a, const torch::Tensor& b, double alpha,
                 double beta, const torch::Tensor& c) {
  TORCH_CHECK(a.dim() == 3 && b.dim() == 3 && c.dim() == 3,
              "BatchedGemm: a, b, c must be 3-D (N, M, K), (N, K, P), (N, M, "
              "P)");
  const int64_t batch = a.size(0), m = a.size(1), k = a.size(2), p = b.size(2);
  TORCH_CHECK(b.size(0) == batch && b.size(1) == k && c.size(0) == batch &&
                  c.size(1) == m && c.size(2) == p,
              "BatchedGemm: shapes ", a.sizes(), " @ ", b.sizes(), " -> ",
              c.sizes(), " do not match");
  const bool blas = a.device().is_cpu() && (a.scalar_type() == torch::kFloat ||
                                            a.scalar_type() == torch::kDouble);
  if (!blas) {
    // Another device or dtype: ATen's own product into the view.
    if (beta == 0.0) {
      const torch::Tensor product = torch::bmm(a, b);
      c.copy_(alpha == 1.0 ? product : product * alpha);
    } else {
      c.baddbmm_(a, b, beta, alpha);
    }
    return;
  }
  TORCH_CHECK(b.scalar_type() == a.scalar_type() &&
                  c.scalar_type() == a.scalar_type() && b.device().is_cpu() &&
                  c.device().is_cpu(),
              "BatchedGemm: a, b, c of one dtype on the CPU");
  TORCH_CHECK(c.stride(2) == 1 && c.stride(1) >= std::max<int64_t>(1, p),
              "BatchedGemm: c must be row-major in its last two dimensions");
  if (batch == 0 || m == 0 || p == 0) return;
  if (k == 0) {
    // An empty sum: c = beta * c (BLAS would do the same, but a zero leading
    // dimension is invalid).
    if (beta == 0.0) {
      c.zero_();
    } else {
      c.mul_(beta);
    }
    return;
  }
  if (a.scalar_type() == torch::kDouble) {
    Run<double>(a, b, alpha, beta, c);
  } else {
    Run<float>(a, b, alpha, beta, c);
  }
}

}  // namespace sparse_layers::layers
