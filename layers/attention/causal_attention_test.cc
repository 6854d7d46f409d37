#include "layers/attention/causal_attention.h"

#include <torch/torch.h>

#include <tuple>

#include "gtest/gtest.h"
#include "layers/attention/attention.h"

namespace sparse_layers::layers {
namespace {

TEST(CausalAttentionTest, MatchesPerHeadReferenceAndIsCausal) {
  torch::manual_seed(2);
  AttentionOptions options;
  options.d_model = 12;
  options.n_heads = 3;
  options.context_length = 8;
  CausalSelfAttention attention(options);
  const torch::Tensor x = torch::randn({2, 5, 12});
  const torch::Tensor y = attention(x);

  // Reference: explicit loops over heads and positions.
  const torch::Tensor qkv = torch::matmul(x, attention->qkv->weight.t());
  torch::Tensor mixed = torch::zeros({2, 5, 12});
  for (int h = 0; h < 3; ++h) {
    const auto q = qkv.slice(-1, h * 4, h * 4 + 4);
    const auto k = qkv.slice(-1, 12 + h * 4, 12 + h * 4 + 4);
    const auto v = qkv.slice(-1, 24 + h * 4, 24 + h * 4 + 4);
    for (int t = 0; t < 5; ++t) {
      const auto scores =
          torch::matmul(k.slice(1, 0, t + 1), q.select(1, t).unsqueeze(-1))
              .squeeze(-1) /
          2.0;  // sqrt(head_dim = 4).
      const auto weights = torch::softmax(scores, -1);
      mixed.select(1, t).slice(-1, h * 4, h * 4 + 4) =
          torch::matmul(weights.unsqueeze(1), v.slice(1, 0, t + 1)).squeeze(1);
    }
  }
  const torch::Tensor expected =
      torch::matmul(mixed, attention->out->weight.t());
  EXPECT_TRUE(torch::allclose(y, expected, 1e-5, 1e-6));

  // Changing the last token changes no earlier output.
  torch::Tensor changed = x.clone();
  changed.select(1, 4).normal_();
  const torch::Tensor y_changed = attention(changed);
  EXPECT_TRUE(torch::equal(y_changed.slice(1, 0, 4), y.slice(1, 0, 4)));
  EXPECT_FALSE(torch::allclose(y_changed.select(1, 4), y.select(1, 4)));
}

// Longer than a kernel block (64 rows): the block kernel (no pattern hook)
// and the dense pattern path (an identity pattern hook) agree on values and
// on every parameter's gradient.
TEST(CausalAttentionTest, BlockKernelMatchesTheDensePatternPath) {
  torch::manual_seed(3);
  AttentionOptions options;
  options.d_model = 16;
  options.n_heads = 2;
  options.context_length = 150;
  CausalSelfAttention attention(options);
  const torch::Tensor x = torch::randn({2, 150, 16});
  const torch::Tensor weights = torch::randn({2, 150, 16});
  const auto output_and_gradients = [&] {
    attention->zero_grad();
    const torch::Tensor y = attention(x);
    (y * weights).sum().backward();
    return std::make_tuple(y.detach(), attention->qkv->weight.grad().clone(),
                           attention->out->weight.grad().clone());
  };
  const auto [blocked, blocked_dqkv, blocked_dout] = output_and_gradients();
  attention->hook_pattern.Add([](const torch::Tensor& p) { return p; });
  const auto [dense, dense_dqkv, dense_dout] = output_and_gradients();
  EXPECT_TRUE(torch::allclose(blocked, dense, 1e-5, 1e-6));
  EXPECT_TRUE(torch::allclose(blocked_dqkv, dense_dqkv, 1e-4, 1e-6));
  EXPECT_TRUE(torch::allclose(blocked_dout, dense_dout, 1e-4, 1e-6));
}

TEST(CausalAttentionTest, FlopCountFollowsKaplan) {
  AttentionOptions options;
  options.d_model = 128;
  options.n_heads = 4;
  options.context_length = 256;
  CausalSelfAttention attention(options);
  // 2 * 4 d^2 (projections) + 2 * 2 T d (scores and mixing).
  EXPECT_EQ(attention->ForwardFlopsPerToken(256),
            2 * 4 * 128 * 128 + 2 * 2 * 256 * 128);
}

// Every attention a config can name is registered, and a name typo lists
// them.
TEST(AttentionRegistryTest, ConfigNamesAreRegistered) {
  for (const char* name : {"mha", "mohd", "lorsa"}) {
    EXPECT_NE(std::find(AttentionRegistry::Names().begin(),
                        AttentionRegistry::Names().end(), name),
              AttentionRegistry::Names().end())
        << name;
  }
  AttentionOptions options;
  options.d_model = 8;
  options.n_heads = 2;
  options.context_length = 4;
  const auto unknown = AttentionRegistry::Create("mhaa", options);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("registered: "), std::string::npos)
      << unknown.status();
  const auto mha = AttentionRegistry::Create("mha", options);
  ASSERT_TRUE(mha.ok()) << mha.status();
  EXPECT_EQ((*mha)->forward(torch::randn({1, 3, 8})).sizes(),
            torch::IntArrayRef({1, 3, 8}));
}

}  // namespace
}  // namespace sparse_layers::layers
