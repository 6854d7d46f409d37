#include "layers/models/gpt.h"

#include <torch/torch.h>

#include <cmath>

#include "gtest/gtest.h"

namespace sparse_layers::layers {
namespace {

GptOptions SmallOptions(bool rotary, bool rms_norm, const std::string& ffn) {
  GptOptions options;
  options.vocab_size = 50;
  options.context_length = 16;
  options.d_model = 16;
  options.n_layers = 2;
  options.n_heads = 4;
  options.ffn = ffn;
  options.d_ffn = 32;
  options.rotary = rotary;
  options.rms_norm = rms_norm;
  return options;
}

std::shared_ptr<GptImpl> MakeModel(const GptOptions& options) {
  torch::manual_seed(0);
  auto model = GptImpl::Create(options);
  EXPECT_TRUE(model.ok()) << model.status();
  return *model;
}

torch::Tensor Tokens() {
  torch::manual_seed(3);
  return torch::randint(0, 50, {2, 12}, torch::kLong);
}

class GptVariantsTest
    : public ::testing::TestWithParam<std::tuple<bool, bool, std::string>> {};

TEST_P(GptVariantsTest, CaptureEqualsRecomputation) {
  auto [rotary, rms_norm, ffn] = GetParam();
  auto model = MakeModel(SmallOptions(rotary, rms_norm, ffn));
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> mid, ffn_in, hidden, ffn_out, post;
  model->FindHook("blocks.1.hook_resid_mid")->Add(CaptureHook(&mid));
  model->FindHook("blocks.1.ffn.hook_in")->Add(CaptureHook(&ffn_in));
  model->FindHook("blocks.1.ffn.hook_hidden")->Add(CaptureHook(&hidden));
  model->FindHook("blocks.1.ffn.hook_out")->Add(CaptureHook(&ffn_out));
  model->FindHook("blocks.1.hook_resid_post")->Add(CaptureHook(&post));
  const torch::Tensor logits = model->forward(Tokens());
  ASSERT_EQ(mid.size(), 1u);
  ASSERT_EQ(hidden.size(), 1u);
  ASSERT_EQ(hidden[0].size(-1), 32);
  model->ClearHooks();

  // Recompute the second block's FFN sub-layer from the captured residual.
  Block& block = model->blocks[1];
  const torch::Tensor normed = block->ffn_norm.forward(mid[0]);
  EXPECT_TRUE(torch::allclose(normed, ffn_in[0], 1e-6, 1e-6));
  HookPoint none;
  const torch::Tensor recomputed = block->ffn->Forward(normed, none);
  EXPECT_TRUE(torch::allclose(recomputed, ffn_out[0], 1e-6, 1e-6));
  EXPECT_TRUE(torch::allclose(mid[0] + recomputed, post[0], 1e-6, 1e-6));
  // And the logits from the captured final residual.
  const torch::Tensor from_post = torch::nn::functional::linear(
      model->final_norm.forward(post[0]), model->UnembeddingWeight());
  EXPECT_TRUE(torch::allclose(from_post, logits, 1e-5, 1e-6));
  // Hooks removed: the same logits again.
  EXPECT_TRUE(torch::equal(model->forward(Tokens()), logits));
}

TEST_P(GptVariantsTest, IdentityReplacementChangesNothing) {
  auto [rotary, rms_norm, ffn] = GetParam();
  auto model = MakeModel(SmallOptions(rotary, rms_norm, ffn));
  torch::NoGradGuard no_grad;
  const torch::Tensor logits = model->forward(Tokens());
  // Identity function on every hook point.
  for (const std::string& name : model->HookNames()) {
    model->FindHook(name)->Add(
        ReplaceHook([](const torch::Tensor& x) { return x; }));
  }
  // The FFN and attention of every block replaced by themselves.
  for (int layer = 0; layer < 2; ++layer) {
    auto ffn_module = model->blocks[layer]->ffn;
    model->ReplaceFfn(layer, [ffn_module](const torch::Tensor& x) {
      HookPoint none;
      return ffn_module->Forward(x, none);
    });
    auto attention = model->blocks[layer]->attention;
    model->ReplaceAttention(layer, [attention](const torch::Tensor& x) mutable {
      return attention->forward(x);
    });
  }
  EXPECT_TRUE(torch::equal(model->forward(Tokens()), logits));
  // A zero-ablated FFN does change the output.
  model->ReplaceFfn(
      1, [](const torch::Tensor& x) { return torch::zeros_like(x); });
  EXPECT_FALSE(torch::allclose(model->forward(Tokens()), logits));
}

INSTANTIATE_TEST_SUITE_P(
    Variants, GptVariantsTest,
    ::testing::Values(std::make_tuple(false, false, "gelu_mlp"),
                      std::make_tuple(true, true, "swiglu"),
                      std::make_tuple(true, false, "relu_mlp")));

TEST(GptTest, SteeringAddsExactlyAlphaTimesDirectionDownstream) {
  auto model = MakeModel(SmallOptions(false, false, "gelu_mlp"));
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> before, after;
  model->FindHook("blocks.0.hook_resid_post")->Add(CaptureHook(&before));
  model->forward(Tokens());
  model->ClearHooks();
  const torch::Tensor direction = torch::randn({16});
  model->FindHook("blocks.0.ffn.hook_out")
      ->Add(AddDirectionHook(direction, 3.0));
  model->FindHook("blocks.0.hook_resid_post")->Add(CaptureHook(&after));
  model->forward(Tokens());
  EXPECT_TRUE(torch::allclose(
      after[0] - before[0], 3.0 * direction.expand_as(before[0]), 1e-4, 1e-5));
}

TEST(GptTest, ParameterAndFlopCountsFollowTheArchitecture) {
  GptOptions options = SmallOptions(false, false, "gelu_mlp");
  auto tied = MakeModel(options);
  const int64_t d = 16, v = 50, t = 16, h = 32;
  // Embeddings, per block 4 d^2 attention + 2 d h MLP + 2 LayerNorms (2 d
  // each), final LayerNorm.
  EXPECT_EQ(tied->ParameterCount(),
            v * d + t * d + 2 * (4 * d * d + 2 * d * h + 4 * d) + 2 * d);
  options.tie_embeddings = false;
  options.rotary = true;
  auto untied = MakeModel(options);
  EXPECT_EQ(untied->ParameterCount(), tied->ParameterCount() + v * d - t * d);
  EXPECT_EQ(tied->ForwardFlopsPerToken(12),
            2 * d * v + 2 * (8 * d * d + 4 * 12 * d + 4 * d * h));
}

TEST(GptTest, InitialLossIsNearUniformAndCausal) {
  auto model = MakeModel(SmallOptions(true, true, "swiglu"));
  const torch::Tensor tokens = Tokens();
  // Targets unrelated to the inputs (tied embeddings favour the input token).
  const torch::Tensor targets = torch::randint(0, 50, {2, 12}, torch::kLong);
  const double loss = model->Loss(tokens, targets).item<double>();
  EXPECT_NEAR(loss, std::log(50.0), 0.1);
  torch::NoGradGuard no_grad;
  torch::Tensor changed = tokens.clone();
  changed.select(1, 11).fill_(7);
  EXPECT_TRUE(torch::equal(model->forward(changed).slice(1, 0, 11),
                           model->forward(tokens).slice(1, 0, 11)));
}

TEST(GptTest, MohdModelIsCausalAndAddsBothBalanceLosses) {
  // MoHD expansion x2: residual width 32, attention inner width 16
  // (seed-mohd.md 2).
  GptOptions options = SmallOptions(true, true, "mohd_swiglu");
  options.d_model = 32;
  options.attention = "mohd";
  options.attention_inner = 16;
  options.n_experts = 4;
  options.top_k = 2;
  auto model = MakeModel(options);
  EXPECT_EQ(model->FindHook("blocks.0.attn.hook_pattern"), nullptr);
  ASSERT_NE(model->FindHook("blocks.0.attn.hook_out"), nullptr);
  const torch::Tensor tokens = Tokens();
  model->train();
  const torch::Tensor targets = torch::randint(0, 50, {2, 12}, torch::kLong);
  const double with_balance = model->Loss(tokens, targets).item<double>();
  const double cross_entropy =
      model->CrossEntropy(tokens, targets).item<double>();
  // 2 layers x (attention + FFN) balance losses, each about beta = 0.01.
  EXPECT_NEAR(with_balance - cross_entropy, 4 * 0.01, 0.02);
  model->eval();
  torch::NoGradGuard no_grad;
  torch::Tensor changed = tokens.clone();
  changed.select(1, 11).fill_(7);
  EXPECT_TRUE(torch::equal(model->forward(changed).slice(1, 0, 11),
                           model->forward(tokens).slice(1, 0, 11)));
}

TEST(GptTest, ConfigErrorsAreClear) {
  config::ModelConfig model;
  model.set_vocab_size(10);
  model.set_context_length(8);
  model.set_d_model(10);
  model.set_n_layers(1);
  model.set_n_heads(3);
  EXPECT_FALSE(GptOptionsFromConfig(model).ok());
  model.set_n_heads(2);
  model.set_positions("alibi");
  EXPECT_FALSE(GptOptionsFromConfig(model).ok());
  model.set_positions("rotary");
  model.set_ffn("no_such_ffn");
  auto options = GptOptionsFromConfig(model);
  ASSERT_TRUE(options.ok());
  EXPECT_EQ(options->d_ffn, 40);
  EXPECT_FALSE(GptImpl::Create(*options).ok());
}

}  // namespace
}  // namespace sparse_layers::layers
