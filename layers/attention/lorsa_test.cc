#include "layers/attention/lorsa.h"

#include <torch/torch.h>

#include "gtest/gtest.h"
#include "ops/core/parameter_count.h"
#include "ops/testing/gradient_check.h"

namespace sparse_layers::layers {
namespace {

LorsaOptions Small() {
  LorsaOptions options;
  options.d_model = 16;
  options.qk_heads = 4;
  options.qk_dim = 4;
  options.ov_heads = 16;  // G = 4.
  options.top_k = 5;
  options.context_length = 12;
  return options;
}

TEST(LorsaTest, GroupedComputationEqualsAPerHeadLoopAndZPatternsSum) {
  torch::manual_seed(0);
  LorsaOptions options = Small();
  options.rotary = false;
  Lorsa lorsa(options);
  const torch::Tensor x = torch::randn({2, 7, 16});
  const LorsaOutput out = lorsa->Run(x, 16);  // K = H: every head kept.
  for (int64_t h = 0; h < 16; ++h) {
    const int64_t g = lorsa->GroupOf(h);
    EXPECT_EQ(g, h / 4);
    const torch::Tensor q = torch::matmul(x, lorsa->w_q[g]);
    const torch::Tensor k = torch::matmul(x, lorsa->w_k[g]);
    torch::Tensor scores = torch::matmul(q, k.transpose(1, 2)) / 2.0;
    scores = scores.masked_fill(torch::ones({7, 7}).triu(1).to(torch::kBool),
                                -INFINITY);
    const torch::Tensor v = torch::matmul(x, lorsa->w_v[h]);  // (B, T)
    // z pattern zpat_ij = A_ij v_j; its row sums are z_i (Lorsa,
    // arXiv:2504.20938 Sec. 5.1).
    const torch::Tensor zpat = torch::softmax(scores, -1) * v.unsqueeze(1);
    const torch::Tensor z = zpat.sum(-1);
    EXPECT_TRUE(torch::allclose(torch::relu(z), out.activations.select(-1, h),
                                1e-5, 1e-6))
        << h;
  }
}

TEST(LorsaTest, KeepsExactlyKHeadsAndIsCausal) {
  torch::manual_seed(1);
  Lorsa lorsa(Small());
  const torch::Tensor x = torch::randn({2, 9, 16});
  const LorsaOutput out = lorsa->Run(x, 5);
  EXPECT_TRUE((out.activations.ne(0).sum(-1) <= 5).all().item<bool>());
  torch::Tensor changed = x.clone();
  changed.select(1, 6).normal_();
  const torch::Tensor y = lorsa->Run(changed, 5).output;
  EXPECT_TRUE(torch::equal(y.slice(1, 0, 6), out.output.slice(1, 0, 6)));
  EXPECT_FALSE(torch::allclose(y.select(1, 6), out.output.select(1, 6)));
}

// Also from a pretrained-style attention: grouped-query (2 key/value heads
// for 4 query heads) with biases (Llama's grouping, Pythia's biases).
TEST(LorsaTest, EqualsTheAttentionLayerItCopiesAtKEqualsH) {
  for (const bool pretrained_style : {false, true}) {
    torch::manual_seed(2);
    AttentionOptions attention_options;
    attention_options.d_model = 16;
    attention_options.n_heads = 4;
    attention_options.context_length = 12;
    attention_options.rotary = true;
    if (pretrained_style) {
      attention_options.n_kv_heads = 2;
      attention_options.bias = true;
    }
    CausalSelfAttention attention(attention_options);
    if (pretrained_style) {
      torch::NoGradGuard no_grad;
      attention->qkv->bias.normal_(0, 0.3);
      attention->out->bias.normal_(0, 0.3);
    }
    LorsaOptions options = Small();
    options.relu = false;
    options.top_k = 16;
    Lorsa lorsa(options);
    lorsa->CopyFromAttention(*attention);
    const torch::Tensor x = torch::randn({3, 10, 16});
    EXPECT_TRUE(
        torch::allclose(lorsa->forward(x), attention->forward(x), 1e-5, 1e-6))
        << "pretrained style " << pretrained_style;
  }
}

// A Lorsa turns its queries and keys as the model's attention does: Pythia's
// partial rotary, Llama's base and scaling (arXiv:2504.20938 App. A).
TEST(LorsaTest, CopiesTheAttentionsPartialScaledRotary) {
  torch::manual_seed(3);
  AttentionOptions attention_options;
  attention_options.d_model = 16;
  attention_options.n_heads = 4;
  attention_options.context_length = 12;
  attention_options.rotary = true;
  attention_options.rotary_dims = 2;
  attention_options.rotary_base = 500;
  attention_options.rotary_scaling.factor = 8;
  attention_options.rotary_scaling.original_context = 4;
  CausalSelfAttention attention(attention_options);
  {
    // Scores of order 1, so that positions visibly move the pattern.
    torch::NoGradGuard no_grad;
    attention->qkv->weight.slice(0, 0, 32).mul_(100);
  }
  LorsaOptions options = Small();
  options.relu = false;
  options.top_k = 16;
  options.rotary_dims = 2;
  options.rotary_base = 500;
  options.rotary_scaling = attention_options.rotary_scaling;
  Lorsa lorsa(options);
  lorsa->CopyFromAttention(*attention);
  const torch::Tensor x = torch::randn({3, 10, 16});
  EXPECT_TRUE(
      torch::allclose(lorsa->forward(x), attention->forward(x), 1e-5, 1e-6));
  // Made by name from the model's attention options, it turns the same way.
  attention_options.ov_heads = 16;
  attention_options.lorsa_top_k = 16;
  attention_options.relu = false;
  absl::StatusOr<std::shared_ptr<AttentionImpl>> by_name =
      AttentionRegistry::Create("lorsa", attention_options);
  ASSERT_TRUE(by_name.ok()) << by_name.status();
  auto named = std::dynamic_pointer_cast<LorsaImpl>(*by_name);
  ASSERT_NE(named, nullptr);
  named->CopyFromAttention(*attention);
  EXPECT_TRUE(
      torch::allclose(named->forward(x), attention->forward(x), 1e-5, 1e-6));
  // Every dim turned at the default base, it differs.
  options = Small();
  options.relu = false;
  options.top_k = 16;
  Lorsa full(options);
  full->CopyFromAttention(*attention);
  EXPECT_FALSE(
      torch::allclose(full->forward(x), attention->forward(x), 1e-3, 1e-3));
}

TEST(LorsaTest, FoldedScalesEqualRunningOnScaledActivations) {
  torch::manual_seed(4);
  Lorsa lorsa(Small());
  {
    torch::NoGradGuard no_grad;
    lorsa->b_q.normal_();
    lorsa->b_v.normal_();
    lorsa->b_o.normal_();
  }
  const torch::Tensor x = torch::randn({2, 8, 16});
  const double input_scale = 2.5, output_scale = 40.0;
  const torch::Tensor expected = lorsa->forward(x * input_scale) / output_scale;
  lorsa->FoldInputOutputScales(input_scale, output_scale);
  EXPECT_TRUE(torch::allclose(lorsa->forward(x), expected, 1e-5, 1e-6));
}

TEST(LorsaTest, FoldingOutputNormsChangesNothing) {
  torch::manual_seed(3);
  Lorsa lorsa(Small());
  {
    torch::NoGradGuard no_grad;
    lorsa->w_o.mul_(torch::rand({16, 1}) * 3 + 0.1);
    lorsa->b_v.normal_();
  }
  const torch::Tensor x = torch::randn({2, 8, 16});
  const torch::Tensor before = lorsa->forward(x);
  lorsa->FoldOutputNorms();
  EXPECT_TRUE(torch::allclose(lorsa->forward(x), before, 1e-5, 1e-5));
  EXPECT_TRUE(torch::allclose(lorsa->w_o.norm(2, 1), torch::ones({16})));
}

TEST(LorsaTest, NoGradientThroughSelectionAndCountsFollowTheFormula) {
  torch::manual_seed(4);
  Lorsa lorsa(Small());
  const torch::Tensor x = torch::randn({1, 6, 16});
  const LorsaOutput out = lorsa->Run(x, 5);
  out.output.sum().backward();
  // Heads never selected at any position receive no gradient on w_o.
  const torch::Tensor used = out.activations.ne(0).flatten(0, 1).any(0);
  EXPECT_EQ(
      lorsa->w_o.grad().index({used.logical_not()}).abs().sum().item<double>(),
      0);
  // Pythia-160M setup: 2 H_QK d D_QK + 2 H d = 18,874,368 (+ biases).
  LorsaOptions pythia;
  pythia.d_model = 768;
  pythia.qk_heads = 96;
  pythia.qk_dim = 64;
  pythia.ov_heads = 6144;
  pythia.top_k = 64;
  pythia.context_length = 8;
  pythia.rotary = false;
  Lorsa big(pythia);
  EXPECT_EQ(CountParameters(*big), 18874368 + 2 * 96 * 64 + 6144 + 768);
}

TEST(LorsaTest, SparseOutputDecodeEqualsTheDenseOne) {
  torch::manual_seed(6);
  Lorsa lorsa(Small());
  const torch::Tensor x = torch::randn({2, 6, 16});
  const torch::Tensor sparse = lorsa->forward(x);
  lorsa->dense_output = true;
  EXPECT_TRUE(torch::allclose(sparse, lorsa->forward(x), 1e-5, 1e-6));
}

// forward mixes through the block-causal kernel; Run (the dense pattern) is
// its reference: same output and parameter gradients, windows longer than a
// kernel block included.
TEST(LorsaTest, ForwardKernelEqualsRunAndItsGradients) {
  for (const int64_t length : {6, 80}) {
    torch::manual_seed(7);
    LorsaOptions options = Small();
    options.context_length = 80;
    Lorsa lorsa(options);
    const torch::Tensor x = torch::randn({3, length, 16});
    const torch::Tensor weights = torch::randn({3, length, 16});
    auto run = [&](bool kernel) {
      lorsa->zero_grad();
      const torch::Tensor out =
          kernel ? lorsa->forward(x) : lorsa->Run(x, options.top_k).output;
      (out * weights).sum().backward();
      std::vector<torch::Tensor> all = {out.detach()};
      for (const auto& p : lorsa->parameters()) all.push_back(p.grad().clone());
      return all;
    };
    const auto kernel = run(true), reference = run(false);
    for (size_t i = 0; i < kernel.size(); ++i) {
      EXPECT_TRUE(torch::allclose(kernel[i], reference[i], 1e-4, 1e-5))
          << "T " << length << " tensor " << i << " max diff "
          << (kernel[i] - reference[i]).abs().max().item<double>();
    }
  }
}

TEST(LorsaTest, GradientsMatchFiniteDifferences) {
  torch::manual_seed(5);
  Lorsa lorsa(Small());
  lorsa->to(torch::kDouble);
  const torch::Tensor x = torch::randn({1, 5, 16}, torch::kDouble);
  std::vector<std::pair<std::string, torch::Tensor>> named;
  for (const auto& item : lorsa->named_parameters())
    named.emplace_back(item.key(), item.value());
  const auto mismatches = testing::CheckGradients(
      [&] { return lorsa->forward(x).pow(2).sum(); }, named);
  EXPECT_TRUE(mismatches.empty()) << mismatches.front();
}

}  // namespace
}  // namespace sparse_layers::layers
