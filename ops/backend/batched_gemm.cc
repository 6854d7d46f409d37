#include "ops/backend/batched_gemm.h"

#include <ATen/Parallel.h>
#include <cblas.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

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

// The Fortran interface, as ATen's own mm calls it: OpenBLAS's CBLAS entry
// sends some row-major NoTrans products below a size to a "direct" AVX-512
// kernel without its K blocking, so through CBLAS a piece of a product could
// round differently from the whole.
extern "C" {
void sgemm_(const char* transa, const char* transb, const int* m, const int* n,
            const int* k, const float* alpha, const float* a, const int* lda,
            const float* b, const int* ldb, const float* beta, float* c,
            const int* ldc);
void dgemm_(const char* transa, const char* transb, const int* m, const int* n,
            const int* k, const double* alpha, const double* a, const int* lda,
            const double* b, const int* ldb, const double* beta, double* c,
            const int* ldc);
}

void FortranGemm(const char* ta, const char* tb, const int* m, const int* n,
                 const int* k, const float* a, const int* lda, const float* b,
                 const int* ldb, double beta, float* c, const int* ldc) {
  const float one = 1, beta_f = static_cast<float>(beta);
  sgemm_(ta, tb, m, n, k, &one, a, lda, b, ldb, &beta_f, c, ldc);
}

void FortranGemm(const char* ta, const char* tb, const int* m, const int* n,
                 const int* k, const double* a, const int* lda, const double* b,
                 const int* ldb, double beta, double* c, const int* ldc) {
  const double one = 1;
  dgemm_(ta, tb, m, n, k, &one, a, lda, b, ldb, &beta, c, ldc);
}

// An empty sum (k = 0): c = beta c. BLAS would do the same, but a zero leading
// dimension is invalid; beta = 0 clears c even where it held NaN.
void ScaleForEmptySum(const torch::Tensor& c, double beta) {
  if (beta == 0.0) {
    c.zero_();
  } else {
    c.mul_(beta);
  }
}

template <typename T>
void RunTask(const GemmTask& task, double beta) {
  const int64_t m = task.a.size(0), k = task.a.size(1), p = task.b.size(1);
  if (m == 0 || p == 0) return;
  if (k == 0) {
    ScaleForEmptySum(task.c, beta);
    return;
  }
  const Operand<T> left = Describe<T>(task.a.unsqueeze(0));
  const Operand<T> right = Describe<T>(task.b.unsqueeze(0));
  // Row-major c = a b is column-major c^T = b^T a^T: b first, and a
  // row-major operand is its own transpose read column-major ('N').
  const char tb = right.transpose == CblasNoTrans ? 'N' : 'T';
  const char ta = left.transpose == CblasNoTrans ? 'N' : 'T';
  const int n_cols = static_cast<int>(p), n_rows = static_cast<int>(m),
            depth = static_cast<int>(k), ldb = static_cast<int>(right.leading),
            lda = static_cast<int>(left.leading),
            ldc = static_cast<int>(task.c.stride(0));
  FortranGemm(&tb, &ta, &n_cols, &n_rows, &depth, right.data, &ldb, left.data,
              &lda, beta, task.c.data_ptr<T>(), &ldc);
}

}  // namespace

void IndependentGemms(const std::vector<GemmTask>& tasks, double beta) {
  if (tasks.empty()) return;
  const torch::ScalarType dtype = tasks[0].a.scalar_type();
  TORCH_CHECK(dtype == torch::kFloat || dtype == torch::kDouble,
              "IndependentGemms: float32 or float64, got ", dtype);
  std::vector<double> flops_before(tasks.size() + 1, 0.0);
  for (size_t i = 0; i < tasks.size(); ++i) {
    const GemmTask& t = tasks[i];
    TORCH_CHECK(t.a.dim() == 2 && t.b.dim() == 2 && t.c.dim() == 2 &&
                    t.b.size(0) == t.a.size(1) && t.c.size(0) == t.a.size(0) &&
                    t.c.size(1) == t.b.size(1),
                "IndependentGemms: task ", i, " has shapes ", t.a.sizes(),
                " @ ", t.b.sizes(), " -> ", t.c.sizes());
    TORCH_CHECK(t.a.scalar_type() == dtype && t.b.scalar_type() == dtype &&
                    t.c.scalar_type() == dtype && t.a.device().is_cpu() &&
                    t.b.device().is_cpu() && t.c.device().is_cpu(),
                "IndependentGemms: every operand of one dtype on the CPU");
    TORCH_CHECK(t.c.stride(1) == 1 &&
                    t.c.stride(0) >= std::max<int64_t>(1, t.c.size(1)),
                "IndependentGemms: c must be row-major");
    TORCH_CHECK(FitsInt(t.a.size(0)) && FitsInt(t.a.size(1)) &&
                    FitsInt(t.b.size(1)) && FitsInt(t.a.stride(0)) &&
                    FitsInt(t.a.stride(1)) && FitsInt(t.b.stride(0)) &&
                    FitsInt(t.b.stride(1)) && FitsInt(t.c.stride(0)),
                "IndependentGemms: a dimension exceeds BLAS's int range");
    // An empty sum still writes its c: count it as one term.
    flops_before[i + 1] =
        flops_before[i] +
        double(t.a.size(0)) * std::max<int64_t>(1, t.a.size(1)) * t.b.size(1);
  }
  // Thread r runs the tasks whose FLOP midpoint falls in its share r / threads.
  // Every thread gets a share, even an empty one, so that a region is open
  // and OpenBLAS runs each product on one thread.
  const int64_t threads = std::max<int64_t>(1, at::get_num_threads());
  const double total = std::max(flops_before.back(), 1.0);
  auto share_of = [&](size_t i) {
    const double middle = 0.5 * (flops_before[i] + flops_before[i + 1]);
    return std::min<int64_t>(threads - 1, int64_t(middle / total * threads));
  };
  std::vector<size_t> first(threads + 1, tasks.size());
  size_t next = 0;
  for (int64_t r = 0; r < threads; ++r) {
    while (next < tasks.size() && share_of(next) < r) ++next;
    first[r] = next;
  }
  at::parallel_for(0, threads, 1, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      for (size_t i = first[r]; i < first[r + 1]; ++i) {
        if (dtype == torch::kDouble) {
          RunTask<double>(tasks[i], beta);
        } else {
          RunTask<float>(tasks[i], beta);
        }
      }
    }
  });
}

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
    ScaleForEmptySum(c, beta);
    return;
  }
  if (a.scalar_type() == torch::kDouble) {
    Run<double>(a, b, alpha, beta, c);
  } else {
    Run<float>(a, b, alpha, beta, c);
  }
}

}  // namespace sparse_layers::layers
