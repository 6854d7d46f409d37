#include "ops/backend/torch_runtime.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "torch/torch.h"

namespace sparse_layers::backend {
namespace {

TEST(TorchRuntimeTest, MatmulMatchesHandComputedProduct) {
  ASSERT_TRUE(SetTorchThreads(2).ok());
  torch::Tensor a = torch::tensor({{1.0f, 2.0f}, {3.0f, 4.0f}});
  torch::Tensor b = torch::tensor({{5.0f, 6.0f}, {7.0f, 8.0f}});
  torch::Tensor expected = torch::tensor({{19.0f, 22.0f}, {43.0f, 50.0f}});
  EXPECT_TRUE(torch::equal(torch::matmul(a, b), expected));
}

TEST(TorchRuntimeTest, LargeMatmulAgreesWithDoublePrecision) {
  torch::manual_seed(0);
  torch::Tensor a = torch::randn({256, 192});
  torch::Tensor b = torch::randn({192, 128});
  torch::Tensor reference =
      torch::matmul(a.to(torch::kDouble), b.to(torch::kDouble));
  torch::Tensor product = torch::matmul(a, b);
  EXPECT_LT((product.to(torch::kDouble) - reference).abs().max().item<double>(),
            1e-3);
}

TEST(TorchRuntimeTest, SgemmComesFromOpenBlasNotTheReferenceBlas) {
  absl::StatusOr<std::string> provider = SgemmProvider();
  ASSERT_TRUE(provider.ok()) << provider.status();
  EXPECT_FALSE(IsReferenceBlas(*provider))
      << "LibTorch calls the reference BLAS (" << *provider
      << "); install libopenblas0-openmp";
  EXPECT_THAT(*provider, testing::HasSubstr("openblas"));
}

TEST(TorchRuntimeTest, SetsThreadsExplicitly) {
  ASSERT_TRUE(SetTorchThreads(1).ok());
  EXPECT_EQ(torch::get_num_threads(), 1);
  ASSERT_TRUE(SetTorchThreads(2).ok());
  EXPECT_EQ(torch::get_num_threads(), 2);
  EXPECT_FALSE(SetTorchThreads(0).ok());
}

TEST(TorchRuntimeTest, RecognisesDebianBlasPaths) {
  EXPECT_TRUE(
      IsReferenceBlas("/usr/lib/x86_64-linux-gnu/blas/libblas.so.3.11.0"));
  EXPECT_FALSE(IsReferenceBlas(
      "/usr/lib/x86_64-linux-gnu/openblas-openmp/libblas.so.3"));
}

}  // namespace
}  // namespace sparse_layers::backend
