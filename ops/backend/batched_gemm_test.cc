#include "ops/backend/batched_gemm.h"

#include <torch/torch.h>

#include <limits>
#include <vector>

#include "gtest/gtest.h"

namespace sparse_layers::layers {
namespace {

// torch::baddbmm in double: the reference every layout is checked against.
torch::Tensor Reference(const torch::Tensor& a, const torch::Tensor& b,
                        float alpha, float beta, const torch::Tensor& c) {
  return torch::baddbmm(c.to(torch::kDouble), a.to(torch::kDouble),
                        b.to(torch::kDouble), beta, alpha)
      .to(torch::kFloat);
}

TEST(BatchedGemmTest, EveryOperandLayoutMatchesBaddbmm) {
  torch::manual_seed(1);
  const int64_t n = 5, m = 7, k = 11, p = 6;
  // Row-major, a transpose read in place, a narrowed view, and a layout that
  // must be copied (a stride-2 column).
  const torch::Tensor a_rows = torch::randn({n, m, k});
  const torch::Tensor a_cols = torch::randn({n, k, m}).transpose(1, 2);
  const torch::Tensor a_narrow = torch::randn({n, m + 4, k}).narrow(1, 2, m);
  const torch::Tensor a_strided =
      torch::randn({n, m, 2 * k}).slice(2, 0, 2 * k, 2);
  const torch::Tensor b_rows = torch::randn({n, k, p});
  const torch::Tensor b_cols =
      torch::randn({n, p + 3, k}).narrow(1, 0, p).transpose(1, 2);
  for (const torch::Tensor& a : {a_rows, a_cols, a_narrow, a_strided}) {
    for (const torch::Tensor& b : {b_rows, b_cols}) {
      const torch::Tensor c = torch::randn({n, m, p});
      const torch::Tensor expected = Reference(a, b, 0.5f, 1.0f, c);
      BatchedGemm(a, b, 0.5f, 1.0f, c);
      EXPECT_TRUE(torch::allclose(c, expected, 1e-5, 1e-5))
          << (c - expected).abs().max().item<float>();
    }
  }
}

// c a narrowed view of a larger tensor: rows outside it stay untouched, and
// beta = 0 ignores c's old values (NaN included).
TEST(BatchedGemmTest, WritesOnlyTheViewAndBetaZeroIgnoresOldValues) {
  torch::manual_seed(2);
  const torch::Tensor a = torch::randn({3, 4, 5});
  const torch::Tensor b = torch::randn({3, 5, 6});
  const torch::Tensor whole = torch::full(
      {3, 10, 6}, std::numeric_limits<float>::quiet_NaN(), torch::kFloat);
  BatchedGemm(a, b, 1.0f, 0.0f, whole.narrow(1, 3, 4));
  EXPECT_TRUE(
      torch::allclose(whole.narrow(1, 3, 4), torch::bmm(a, b), 1e-5, 1e-6));
  EXPECT_TRUE(whole.narrow(1, 0, 3).isnan().all().item<bool>());
  EXPECT_TRUE(whole.narrow(1, 7, 3).isnan().all().item<bool>());
}

TEST(BatchedGemmTest, EmptySumScalesAndRunsAreBitIdentical) {
  torch::manual_seed(3);
  const torch::Tensor c = torch::randn({2, 3, 4});
  const torch::Tensor scaled = c * 0.25f;
  BatchedGemm(torch::empty({2, 3, 0}), torch::empty({2, 0, 4}), 1.0f, 0.25f, c);
  EXPECT_TRUE(torch::equal(c, scaled));

  at::set_num_threads(2);
  const torch::Tensor a = torch::randn({64, 64, 64});
  const torch::Tensor b = torch::randn({64, 64, 256});
  const torch::Tensor first = torch::zeros({64, 64, 256});
  const torch::Tensor second = torch::zeros({64, 64, 256});
  BatchedGemm(a, b, 1.0f, 0.0f, first);
  BatchedGemm(a, b, 1.0f, 0.0f, second);
  EXPECT_TRUE(torch::equal(first, second));
}

// float64 through dgemm (the gradient checks run in double); other dtypes
// through ATen.
TEST(BatchedGemmTest, DoubleAndIntegerProductsAreExact) {
  torch::manual_seed(4);
  const torch::Tensor a = torch::randint(-4, 5, {3, 4, 5}, torch::kLong);
  const torch::Tensor b = torch::randint(-4, 5, {3, 5, 2}, torch::kLong);
  const torch::Tensor product = torch::bmm(a, b);
  const torch::Tensor as_long = torch::empty({3, 4, 2}, torch::kLong);
  BatchedGemm(a, b, 1, 0, as_long);
  EXPECT_TRUE(torch::equal(as_long, product));
  const torch::Tensor as_double = torch::ones({3, 4, 2}, torch::kDouble);
  BatchedGemm(a.to(torch::kDouble),
              b.to(torch::kDouble).transpose(1, 2).contiguous().transpose(1, 2),
              2, 1, as_double);
  EXPECT_TRUE(torch::equal(as_double, (2 * product + 1).to(torch::kDouble)));
}

TEST(BatchedGemmTest, BadShapesAndOutputLayoutAreRejected) {
  const torch::Tensor a = torch::randn({2, 3, 4});
  const torch::Tensor b = torch::randn({2, 4, 5});
  EXPECT_THROW(
      BatchedGemm(a, torch::randn({2, 3, 5}), 1, 0, torch::empty({2, 3, 5})),
      c10::Error);
  EXPECT_THROW(BatchedGemm(a, b, 1, 0, torch::empty({2, 5, 3}).transpose(1, 2)),
               c10::Error);
  EXPECT_THROW(
      BatchedGemm(a.to(torch::kDouble), b, 1, 0, torch::empty({2, 3, 5})),
      c10::Error);
}

// Products of different shapes and layouts, one of them an empty sum, each
// against torch::mm in double; c's columns outside a task stay untouched.
TEST(IndependentGemmsTest, EachTaskMatchesItsOwnProduct) {
  torch::manual_seed(5);
  at::set_num_threads(2);
  const torch::Tensor whole = torch::full({40, 9}, -7.0f);
  std::vector<GemmTask> tasks = {
      {torch::randn({13, 6}), torch::randn({6, 9}), whole.narrow(0, 0, 13)},
      {torch::randn({6, 20}).t(), torch::randn({9, 6}).t(),
       whole.narrow(0, 13, 20)},
      {torch::empty({4, 0}), torch::empty({0, 9}), whole.narrow(0, 33, 4)},
      {torch::randn({2, 300}), torch::randn({300, 5}),
       whole.narrow(0, 37, 2).narrow(1, 0, 5)},
  };
  IndependentGemms(tasks, 0.0);
  for (size_t i = 0; i < tasks.size(); ++i) {
    const torch::Tensor expected =
        torch::mm(tasks[i].a.to(torch::kDouble), tasks[i].b.to(torch::kDouble))
            .to(torch::kFloat);
    EXPECT_TRUE(torch::allclose(tasks[i].c, expected, 1e-4, 1e-5))
        << "task " << i;
  }
  EXPECT_TRUE(
      (whole.narrow(0, 37, 2).narrow(1, 5, 4) == -7.0f).all().item<bool>());
  EXPECT_THROW(IndependentGemms({{torch::randn({2, 3}), torch::randn({4, 5}),
                                  torch::empty({2, 5})}},
                                0.0),
               c10::Error);
}

// A task's bits do not depend on the thread it runs on or the thread count.
TEST(IndependentGemmsTest, BitsDoNotDependOnTheThreadCount) {
  torch::manual_seed(6);
  std::vector<torch::Tensor> a, b;
  for (int64_t rows : {300, 7, 512, 64, 1}) {
    a.push_back(torch::randn({rows, 96}));
    b.push_back(torch::randn({96, 160}));
  }
  auto run = [&](int threads) {
    at::set_num_threads(threads);
    std::vector<GemmTask> tasks;
    std::vector<torch::Tensor> outputs;
    for (size_t i = 0; i < a.size(); ++i) {
      outputs.push_back(torch::empty({a[i].size(0), 160}));
      tasks.push_back({a[i], b[i], outputs.back()});
    }
    IndependentGemms(tasks, 0.0);
    return torch::cat(outputs);
  };
  const torch::Tensor one = run(1);
  EXPECT_TRUE(torch::equal(one, run(2)));
  EXPECT_TRUE(torch::equal(one, run(2)));
  at::set_num_threads(2);
}

}  // namespace
}  // namespace sparse_layers::layers
