#include "layers/ffn/dense_mlp.h"

#include <torch/torch.h>

#include "gtest/gtest.h"

namespace sparse_layers::layers {
namespace {

FeedForwardOptions Options() {
  FeedForwardOptions options;
  options.d_model = 6;
  options.d_ffn = 10;
  return options;
}

TEST(FeedForwardRegistryTest, KnowsTheDenseFamiliesAndRejectsOthers) {
  const std::vector<std::string> names = FeedForwardRegistry::Names();
  for (const char* name :
       {"gelu_mlp", "relu_mlp", "solu_mlp", "swiglu", "geglu"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
  }
  auto unknown = FeedForwardRegistry::Create("nope", Options());
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("gelu_mlp"), std::string::npos);
}

TEST(DenseMlpTest, GeluAndReluMatchTheirFormulas) {
  torch::manual_seed(0);
  const torch::Tensor x = torch::randn({4, 6});
  HookPoint none;
  for (const char* name : {"gelu_mlp", "relu_mlp"}) {
    auto ffn = FeedForwardRegistry::Create(name, Options());
    ASSERT_TRUE(ffn.ok());
    auto* mlp = dynamic_cast<DenseMlpImpl*>(ffn->get());
    ASSERT_NE(mlp, nullptr);
    const torch::Tensor pre = torch::matmul(x, mlp->in->weight.t());
    const torch::Tensor hidden =
        std::string(name) == "gelu_mlp"
            ? 0.5 * pre * (1 + torch::erf(pre / std::sqrt(2.0)))
            : pre.clamp_min(0);
    EXPECT_TRUE(torch::allclose((*ffn)->Forward(x, none),
                                torch::matmul(hidden, mlp->out->weight.t()),
                                1e-5, 1e-6))
        << name;
    EXPECT_EQ((*ffn)->ForwardFlopsPerToken(), 2 * 2 * 6 * 10);
  }
}

TEST(SwiGluTest, MatchesShazeerEquation) {
  torch::manual_seed(1);
  auto ffn = FeedForwardRegistry::Create("swiglu", Options());
  ASSERT_TRUE(ffn.ok());
  auto* glu = dynamic_cast<GatedMlpImpl*>(ffn->get());
  const torch::Tensor x = torch::randn({3, 6});
  const torch::Tensor g = torch::matmul(x, glu->gate->weight.t());
  const torch::Tensor hidden =
      g * torch::sigmoid(g) * torch::matmul(x, glu->up->weight.t());
  std::vector<torch::Tensor> captured;
  HookPoint hook("h");
  hook.Add(CaptureHook(&captured));
  EXPECT_TRUE(torch::allclose((*ffn)->Forward(x, hook),
                              torch::matmul(hidden, glu->down->weight.t()),
                              1e-5, 1e-6));
  ASSERT_EQ(captured.size(), 1u);
  EXPECT_TRUE(torch::allclose(captured[0], hidden, 1e-5, 1e-6));
  EXPECT_EQ((*ffn)->ForwardFlopsPerToken(), 3 * 2 * 6 * 10);
}

TEST(GatedMlpTest, GegluAndSoluMatchTheirFormulas) {
  torch::manual_seed(2);
  HookPoint none;
  const torch::Tensor x = torch::randn({3, 6});
  auto geglu = FeedForwardRegistry::Create("geglu", Options());
  ASSERT_TRUE(geglu.ok());
  auto* glu = dynamic_cast<GatedMlpImpl*>(geglu->get());
  const torch::Tensor g = torch::matmul(x, glu->gate->weight.t());
  const torch::Tensor hidden = 0.5 * g * (1 + torch::erf(g / std::sqrt(2.0))) *
                               torch::matmul(x, glu->up->weight.t());
  EXPECT_TRUE(torch::allclose((*geglu)->Forward(x, none),
                              torch::matmul(hidden, glu->down->weight.t()),
                              1e-5, 1e-6));

  auto solu = FeedForwardRegistry::Create("solu_mlp", Options());
  ASSERT_TRUE(solu.ok());
  auto* mlp = dynamic_cast<DenseMlpImpl*>(solu->get());
  const torch::Tensor pre = torch::matmul(x, mlp->in->weight.t());
  const torch::Tensor soft = pre * torch::softmax(pre, -1);
  // LayerNorm with unit gain and zero bias at init.
  const torch::Tensor normed =
      (soft - soft.mean(-1, true)) /
      torch::sqrt(soft.var(-1, /*unbiased=*/false, true) + 1e-5);
  EXPECT_TRUE(torch::allclose((*solu)->Forward(x, none),
                              torch::matmul(normed, mlp->out->weight.t()), 1e-4,
                              1e-5));
}

}  // namespace
}  // namespace sparse_layers::layers
