#include "ops/core/grouped_linear.h"

#include <torch/torch.h>

#include <vector>

#include "gtest/gtest.h"
#include "ops/testing/gradient_check.h"

namespace sparse_layers::layers {
namespace {

// Groups as a mixture's experts get them: uneven, one empty, one of one row.
const std::vector<int64_t> kRows = {37, 0, 1, 90, 16};

torch::Tensor Weight(GroupWeightLayout layout, int64_t in, int64_t out,
                     torch::Dtype dtype) {
  const int64_t groups = kRows.size();
  return (layout == GroupWeightLayout::kOutByIn
              ? torch::randn({groups, out, in}, dtype)
              : torch::randn({groups, in, out}, dtype))
      .requires_grad_();
}

// Values and both gradients bit for bit equal to one single-threaded
// torch::matmul per group, at 1 and 2 threads; groups longer than a piece
// (300 rows, cut at 64-row boundaries) too.
TEST(GroupedLinearTest, EqualsTheSingleThreadedPerGroupMatmulBitForBit) {
  const std::vector<int64_t> rows = {37, 0, 1, 300, 16};
  for (GroupWeightLayout layout :
       {GroupWeightLayout::kOutByIn, GroupWeightLayout::kInByOut}) {
    torch::manual_seed(7);
    const torch::Tensor x = torch::randn({354, 48}).requires_grad_();
    const torch::Tensor weight = Weight(layout, 48, 80, torch::kFloat);
    const torch::Tensor upstream = torch::randn({354, 80});
    at::set_num_threads(1);
    const torch::Tensor y_ref = GroupedLinearReference(x, weight, rows, layout);
    const auto grads_ref =
        torch::autograd::grad({(y_ref * upstream).sum()}, {x, weight});
    for (int threads : {1, 2}) {
      at::set_num_threads(threads);
      const torch::Tensor y = GroupedLinear(x, weight, rows, layout);
      const auto grads =
          torch::autograd::grad({(y * upstream).sum()}, {x, weight});
      EXPECT_TRUE(torch::equal(y, y_ref)) << "threads " << threads;
      EXPECT_TRUE(torch::equal(grads[0], grads_ref[0]))
          << "threads " << threads;
      EXPECT_TRUE(torch::equal(grads[1], grads_ref[1]))
          << "threads " << threads;
      // The empty group's matrix gets a zero gradient, not garbage.
      EXPECT_TRUE(torch::equal(grads[1][1], torch::zeros_like(grads[1][1])));
    }
  }
  at::set_num_threads(2);
}

// Long sums (in = 1,024, beyond OpenBLAS's K block) and groups of 64 n + 8
// rows, whose 8-row remainders alone would take OpenBLAS's small-matrix kernel
// (CutIntoPieces merges them): still the bits of the whole group's matmul.
TEST(GroupedLinearTest, LongSumsAndSmallLastPiecesKeepTheWholeGroupsBits) {
  const std::vector<int64_t> rows = {136, 8, 200};
  for (GroupWeightLayout layout :
       {GroupWeightLayout::kOutByIn, GroupWeightLayout::kInByOut}) {
    torch::manual_seed(11);
    const int64_t groups = rows.size();
    const torch::Tensor x = torch::randn({344, 1024}).requires_grad_();
    const torch::Tensor weight = (layout == GroupWeightLayout::kOutByIn
                                      ? torch::randn({groups, 96, 1024})
                                      : torch::randn({groups, 1024, 96}))
                                     .requires_grad_();
    const torch::Tensor upstream = torch::randn({344, 96});
    at::set_num_threads(1);
    const torch::Tensor y_ref = GroupedLinearReference(x, weight, rows, layout);
    const auto grads_ref =
        torch::autograd::grad({(y_ref * upstream).sum()}, {x, weight});
    at::set_num_threads(2);
    const torch::Tensor y = GroupedLinear(x, weight, rows, layout);
    const auto grads =
        torch::autograd::grad({(y * upstream).sum()}, {x, weight});
    EXPECT_TRUE(torch::equal(y, y_ref));
    EXPECT_TRUE(torch::equal(grads[0], grads_ref[0]));
    EXPECT_TRUE(torch::equal(grads[1], grads_ref[1]));
  }
}

// A transposed weight view (column-major matrices) trains too: its gradient
// comes back row-major, with the reference's values.
TEST(GroupedLinearTest, TransposedWeightViewsGetTheirGradient) {
  torch::manual_seed(12);
  const torch::Tensor x = torch::randn({144, 6}).requires_grad_();
  const torch::Tensor stored = torch::randn({5, 6, 4}).requires_grad_();
  const torch::Tensor weight = stored.transpose(1, 2);  // (G, out, in) view
  const torch::Tensor y =
      GroupedLinear(x, weight, kRows, GroupWeightLayout::kOutByIn);
  const auto grads = torch::autograd::grad({y.square().sum()}, {x, stored});
  const torch::Tensor y_ref =
      GroupedLinearReference(x, weight, kRows, GroupWeightLayout::kOutByIn);
  const auto grads_ref =
      torch::autograd::grad({y_ref.square().sum()}, {x, stored});
  EXPECT_TRUE(torch::allclose(y, y_ref, 1e-5, 1e-6));
  EXPECT_TRUE(torch::allclose(grads[0], grads_ref[0], 1e-4, 1e-5));
  EXPECT_TRUE(torch::allclose(grads[1], grads_ref[1], 1e-4, 1e-5));
}

// Differentiable once: a second derivative is refused, not silently zero.
TEST(GroupedLinearTest, DoubleBackwardIsRefused) {
  const torch::Tensor x = torch::randn({144, 6}).requires_grad_();
  const torch::Tensor weight = torch::randn({5, 4, 6}).requires_grad_();
  const torch::Tensor y =
      GroupedLinear(x, weight, kRows, GroupWeightLayout::kOutByIn);
  EXPECT_THROW(torch::autograd::grad({y.square().sum()}, {x}, {},
                                     /*retain_graph=*/true,
                                     /*create_graph=*/true),
               c10::Error);
}

TEST(GroupedLinearTest, GradientsMatchFiniteDifferencesInDouble) {
  for (GroupWeightLayout layout :
       {GroupWeightLayout::kOutByIn, GroupWeightLayout::kInByOut}) {
    torch::manual_seed(8);
    const torch::Tensor x =
        torch::randn({144, 6}, torch::kDouble).requires_grad_();
    const torch::Tensor weight = Weight(layout, 6, 5, torch::kDouble);
    const torch::Tensor upstream = torch::randn({144, 5}, torch::kDouble);
    const auto errors = testing::CheckGradients(
        [&] {
          return (GroupedLinear(x, weight, kRows, layout) * upstream).sum();
        },
        {{"x", x}, {"weight", weight}});
    EXPECT_TRUE(errors.empty()) << errors.front();
  }
}

TEST(GroupedLinearTest, RepeatsAreBitIdentical) {
  torch::manual_seed(9);
  const torch::Tensor x = torch::randn({144, 64}).requires_grad_();
  const torch::Tensor weight =
      Weight(GroupWeightLayout::kOutByIn, 64, 256, torch::kFloat);
  auto run = [&] {
    const torch::Tensor y =
        GroupedLinear(x, weight, kRows, GroupWeightLayout::kOutByIn);
    const auto grads = torch::autograd::grad({y.square().sum()}, {x, weight});
    return std::vector<torch::Tensor>{y, grads[0], grads[1]};
  };
  const auto first = run(), second = run();
  for (size_t i = 0; i < first.size(); ++i) {
    EXPECT_TRUE(torch::equal(first[i], second[i])) << i;
  }
}

TEST(GroupedLinearTest, ShapesThatDoNotAddUpAreRejected) {
  const torch::Tensor x = torch::randn({144, 8});
  const torch::Tensor weight = torch::randn({5, 4, 8});
  EXPECT_NO_THROW(GroupedLinear(x, weight, kRows, GroupWeightLayout::kOutByIn));
  EXPECT_THROW(
      GroupedLinear(x, weight, {37, 0, 1, 90, 15}, GroupWeightLayout::kOutByIn),
      c10::Error);
  EXPECT_THROW(GroupedLinear(x, weight, {144}, GroupWeightLayout::kOutByIn),
               c10::Error);
  EXPECT_THROW(GroupedLinear(x, weight, kRows, GroupWeightLayout::kInByOut),
               c10::Error);
  EXPECT_THROW(GroupedLinear(x, weight, {37, 0, 1, 107, -1},
                             GroupWeightLayout::kOutByIn),
               c10::Error);
}

}  // namespace
}  // namespace sparse_layers::layers
