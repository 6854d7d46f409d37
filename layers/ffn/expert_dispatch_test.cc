#include "layers/ffn/expert_dispatch.h"

#include <torch/torch.h>

#include "gtest/gtest.h"
#include "ops/testing/gradient_check.h"

namespace sparse_layers::layers {
namespace {

constexpr int64_t kTokens = 37, kWidth = 6, kHidden = 5, kExperts = 5, kK = 2;

struct Problem {
  torch::Tensor x, experts, weights, encoders, decoders;
};

// Distinct top-2 experts per token, expert 4 never chosen (an empty group).
Problem MakeProblem(torch::Dtype dtype) {
  torch::manual_seed(3);
  const auto options = torch::TensorOptions().dtype(dtype);
  Problem p;
  p.x = torch::randn({kTokens, kWidth}, options).requires_grad_();
  p.experts = std::get<1>(torch::rand({kTokens, kExperts - 1}).topk(kK, -1));
  p.weights = torch::rand({kTokens, kK}, options).requires_grad_();
  p.encoders =
      torch::randn({kExperts, kHidden, kWidth}, options).requires_grad_();
  p.decoders =
      torch::randn({kExperts, kHidden, kWidth}, options).requires_grad_();
  return p;
}

// Slot s = t * k + i is token t's i-th choice: the token of every slot.
torch::Tensor TokenOfSlot(const Problem& p) {
  return torch::arange(kTokens, p.experts.options()).repeat_interleave(kK);
}

// Expert j's GELU MLP on the rows it received.
torch::Tensor GeluExpert(const Problem& p, int64_t j,
                         const torch::Tensor& rows) {
  return torch::matmul(torch::gelu(torch::matmul(rows, p.encoders[j].t())),
                       p.decoders[j]);
}

// The sorted dispatch: one gather in, each expert on its run of sorted rows,
// CombineExpertOutputs out.
torch::Tensor SortedDispatch(const Problem& p) {
  const ExpertSlots slots = SortSlotsByExpert(p.experts, kExperts);
  const std::vector<torch::Tensor> rows_of =
      p.x.index_select(0, slots.tokens).split_with_sizes(slots.rows_per_expert);
  std::vector<torch::Tensor> outputs;
  for (int64_t j = 0; j < kExperts; ++j) {
    outputs.push_back(GeluExpert(p, j, rows_of[j]));
  }
  return CombineExpertOutputs(torch::cat(outputs), slots, p.weights, p.x);
}

// One expert at a time: select its slots, gather, index_add into a copy of
// the output.
torch::Tensor PerExpertReference(const Problem& p) {
  const torch::Tensor flat_experts = p.experts.reshape({-1});
  const torch::Tensor flat_weights = p.weights.reshape({-1, 1});
  const torch::Tensor token_of = TokenOfSlot(p);
  torch::Tensor output = torch::zeros_like(p.x);
  for (int64_t j = 0; j < kExperts; ++j) {
    const torch::Tensor slots = (flat_experts == j).nonzero().view({-1});
    if (slots.numel() == 0) continue;
    const torch::Tensor rows = token_of.index_select(0, slots);
    output = output.index_add(0, rows,
                              GeluExpert(p, j, p.x.index_select(0, rows)) *
                                  flat_weights.index_select(0, slots));
  }
  return output;
}

std::vector<torch::Tensor> OutputAndGradients(
    const Problem& p, torch::Tensor (*dispatch)(const Problem&)) {
  const torch::Tensor y = dispatch(p);
  const torch::Tensor target = torch::linspace(-1, 1, y.numel(), y.options());
  const auto grads =
      torch::autograd::grad({(y.reshape({-1}) * target).sum()},
                            {p.x, p.weights, p.encoders, p.decoders});
  std::vector<torch::Tensor> all = {y.detach()};
  all.insert(all.end(), grads.begin(), grads.end());
  return all;
}

TEST(ExpertDispatchTest, SlotsAreSortedStablyByExpert) {
  const Problem p = MakeProblem(torch::kFloat);
  const ExpertSlots slots = SortSlotsByExpert(p.experts, kExperts);
  const torch::Tensor flat_experts = p.experts.reshape({-1});
  ASSERT_EQ(slots.order.numel(), kTokens * kK);
  EXPECT_TRUE(
      torch::equal(slots.experts, flat_experts.index_select(0, slots.order)));
  EXPECT_TRUE(
      torch::equal(slots.tokens, TokenOfSlot(p).index_select(0, slots.order)));
  EXPECT_EQ(
      slots.rows_per_expert,
      (std::vector<int64_t>{(flat_experts == 0).sum().item<int64_t>(),
                            (flat_experts == 1).sum().item<int64_t>(),
                            (flat_experts == 2).sum().item<int64_t>(),
                            (flat_experts == 3).sum().item<int64_t>(), 0}));
  // Ascending experts; within an expert, ascending slots (stable).
  for (int64_t i = 1; i < slots.order.numel(); ++i) {
    const int64_t before = slots.experts[i - 1].item<int64_t>();
    const int64_t here = slots.experts[i].item<int64_t>();
    EXPECT_LE(before, here) << i;
    if (before == here) {
      EXPECT_LT(slots.order[i - 1].item<int64_t>(),
                slots.order[i].item<int64_t>())
          << i;
    }
  }
}

TEST(ExpertDispatchTest, EqualsThePerExpertReferenceBitForBit) {
  const Problem p = MakeProblem(torch::kFloat);
  const auto fused = OutputAndGradients(p, &SortedDispatch);
  const auto reference = OutputAndGradients(p, &PerExpertReference);
  const char* names[] = {"output", "d x", "d weights", "d encoders",
                         "d decoders"};
  for (size_t i = 0; i < fused.size(); ++i) {
    EXPECT_TRUE(torch::equal(fused[i], reference[i]))
        << names[i] << ": max |difference| "
        << (fused[i] - reference[i]).abs().max().item<double>();
  }
  // Expert 4 received no token: its weights get exact zeros.
  EXPECT_EQ(fused[3][4].abs().sum().item<float>(), 0);
}

TEST(ExpertDispatchTest, EqualsTheDenseSumOfGatedExperts) {
  const Problem p = MakeProblem(torch::kDouble);
  torch::Tensor dense = torch::zeros_like(p.x);
  for (int64_t i = 0; i < kK; ++i) {
    for (int64_t t = 0; t < kTokens; ++t) {
      const int64_t j = p.experts[t][i].item<int64_t>();
      dense[t] += p.weights[t][i] * GeluExpert(p, j, p.x[t].unsqueeze(0))[0];
    }
  }
  const torch::Tensor y = SortedDispatch(p);
  EXPECT_LT(testing::MaxRelativeError(y, dense), 1e-12);
}

TEST(ExpertDispatchTest, GradientsMatchFiniteDifferences) {
  const Problem p = MakeProblem(torch::kDouble);
  const auto messages =
      testing::CheckGradients([&] { return SortedDispatch(p).pow(2).sum(); },
                              {{"x", p.x},
                               {"weights", p.weights},
                               {"encoders", p.encoders},
                               {"decoders", p.decoders}});
  for (const std::string& message : messages) ADD_FAILURE() << message;
}

TEST(ExpertDispatchTest, RepeatsAreBitIdentical) {
  const Problem p = MakeProblem(torch::kFloat);
  const auto first = OutputAndGradients(p, &SortedDispatch);
  const auto second = OutputAndGradients(p, &SortedDispatch);
  for (size_t i = 0; i < first.size(); ++i) {
    EXPECT_TRUE(torch::equal(first[i], second[i])) << i;
  }
}

}  // namespace
}  // namespace sparse_layers::layers
