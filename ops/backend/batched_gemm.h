// Batched matrix products on strided views, one BLAS sgemm per batch entry.
//
// ATen's CPU bmm/baddbmm (LibTorch 1.13 with OpenBLAS) loops over the batch
// with a select and an addmm_ per entry: at d = 256 that bookkeeping was 8% of
// a training step, beyond the products themselves. Here each entry is one
// cblas_sgemm on the views' own pointers and strides, and the entries are
// spread over LibTorch's threads (each sgemm single-threaded inside the
// parallel region), so results are bit-identical from run to run at a given
// thread count.
#ifndef SPARSE_LAYERS_OPS_BACKEND_BATCHED_GEMM_H_
#define SPARSE_LAYERS_OPS_BACKEND_BATCHED_GEMM_H_

#include <torch/torch.h>

#include <vector>

namespace sparse_layers::layers {

// c = beta * c + alpha * a @ b, batch by batch: a (N, M, K), b (N, K, P),
// c (N, M, P); float32 or float64 on the CPU through BLAS (other devices and
// dtypes: ATen's bmm/baddbmm_ into c). a and b may be any views whose last two
// dimensions are row- or column-major (a transpose of a narrowed tensor is
// read in place); other layouts are copied. c is written in place and must be
// row-major in its last two dimensions (a narrow along dim 1 is fine). With
// beta == 0, c's old values are not read (NaN in c does not propagate).
void BatchedGemm(const torch::Tensor& a, const torch::Tensor& b, double alpha,
                 double beta, const torch::Tensor& c);

// One product c = a @ b + beta * c on 2-D views (row- or column-major, as
// BatchedGemm's operands; c row-major).
struct GemmTask {
  torch::Tensor a, b, c;
};

// Independent products of different shapes (a mixture's experts on their own
// rows): the tasks are cut into contiguous runs of about equal FLOPs, one run
// per LibTorch thread, each product one single-threaded call of the Fortran
// sgemm_ / dgemm_ (the entry ATen's mm uses). A product's bits depend on its
// own shape and operands only, not on the run it lands in or the thread
// count. No two tasks may write the same elements of c. Float32 or float64 on
// the CPU, all tasks of one dtype.
void IndependentGemms(const std::vector<GemmTask>& tasks, double beta);

}  // namespace sparse_layers::layers

#endif  // SPARSE_LAYERS_OPS_BACKEND_BATCHED_GEMM_H_
