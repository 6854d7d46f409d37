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

ExpertFn GeluExperts(const Problem& p) {
  return [&p](int64_t j, const torch::Tensor& rows) {
    return torch::matmul(torch::gelu(torch::matmul(rows, p.encoders[j].t())),
                         p.decoders[j]);
  };
}

std::vector<torch::Tensor> OutputAndGradients(
    const Problem& p, decltype(&DispatchToExperts) dispatch) {
  const torch::Tensor y =
      dispatch(p.x, p.experts, p.weights, kExperts, GeluExperts(p));
  const torch::Tensor target = torch::linspace(-1, 1, y.numel(), y.options());
  const auto grads =
      torch::autograd::grad({(y.reshape({-1}) * target).sum()},
                            {p.x, p.weights, p.encoders, p.decoders});
  std::vector<torch::Tensor> all = {y.detach()};
  all.insert(all.end(), grads.begin(), grads.end());
  return all;
}

TEST(ExpertDispatchTest, EqualsThePerExpertReferenceBitForBit) {
  const Problem p = MakeProblem(torch::kFloat);
  const auto fused = OutputAndGradients(p, &DispatchToExperts);
  const auto reference = OutputAndGradients(p, &DispatchToExpertsReference);
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
      dense[t] += p.weights[t][i] * GeluExperts(p)(j, p.x[t].unsqueeze(0))[0];
    }
  }
  const torch::Tensor y =
      DispatchToExperts(p.x, p.experts, p.weights, kExperts, GeluExperts(p));
  EXPECT_LT(testing::MaxRelativeError(y, dense), 1e-12);
}

TEST(ExpertDispatchTest, GradientsMatchFiniteDifferences) {
  const Problem p = MakeProblem(torch::kDouble);
  const auto messages = testing::CheckGradients(
      [&] {
        return DispatchToExperts(p.x, p.experts, p.weights, kExperts,
                                 GeluExperts(p))
            .pow(2)
            .sum();
      },
      {{"x", p.x},
       {"weights", p.weights},
       {"encoders", p.encoders},
       {"decoders", p.decoders}});
  for (const std::string& message : messages) ADD_FAILURE() << message;
}

TEST(ExpertDispatchTest, RepeatsAreBitIdentical) {
  const Problem p = MakeProblem(torch::kFloat);
  const auto first = OutputAndGradients(p, &DispatchToExperts);
  const auto second = OutputAndGradients(p, &DispatchToExperts);
  for (size_t i = 0; i < first.size(); ++i) {
    EXPECT_TRUE(torch::equal(first[i], second[i])) << i;
  }
}

}  // namespace
}  // namespace sparse_layers::layers
