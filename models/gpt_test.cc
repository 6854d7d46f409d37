#include "models/gpt.h"

#include <torch/torch.h>

#include <cmath>
#include <functional>

#include "config/config_validator.h"
#include "config/layer_shapes.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "layers/attention/lorsa.h"
#include "layers/ffn/mixture_of_experts.h"
#include "layers/mohd/mohd.h"
#include "layers/replacement/sparse_replacement.h"
#include "models/tiny_gpt.h"

namespace sparse_layers::layers {
namespace {

GptOptions SmallOptions(bool rotary, bool rms_norm, const std::string& ffn) {
  GptOptions options = testing::TinyGptOptions(50, 16, 2);
  options.n_heads = 4;
  options.ffn = ffn;
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
  EXPECT_TRUE(torch::equal(model->forward(Tokens()), logits));
  // A zero-ablated FFN does change the output, and clearing restores it.
  HookPoint* ffn_out = model->FindHook("blocks.1.ffn.hook_out");
  ffn_out->Add(ZeroAblationHook());
  EXPECT_FALSE(torch::allclose(model->forward(Tokens()), logits));
  model->ClearHooks();
  EXPECT_TRUE(torch::equal(model->forward(Tokens()), logits));
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

TEST(GptTest, WideEmbeddingProjectsToAndFromTheBlocksWidth) {
  // The MoHD study's embedding-width control: a 24-wide embedding and head
  // around 16-wide blocks (arXiv:2412.05644 Table 2 counts no embeddings).
  GptOptions options = SmallOptions(true, false, "gelu_mlp");
  options.tie_embeddings = false;
  auto narrow = MakeModel(options);
  options.embedding_width = 24;
  auto wide = MakeModel(options);
  const int64_t d = 16, v = 50, e = 24;
  EXPECT_EQ(wide->ParameterCount(),
            narrow->ParameterCount() + 2 * v * (e - d) + 2 * e * d);
  EXPECT_EQ(wide->ForwardFlopsPerToken(12) - narrow->ForwardFlopsPerToken(12),
            2 * v * (e - d) + 4 * e * d);
  EXPECT_EQ(wide->token_embedding->weight.sizes(),
            (std::vector<int64_t>{v, e}));
  EXPECT_EQ(wide->UnembeddingWeight().sizes(), (std::vector<int64_t>{v, d}));
  // Logits: the blocks' final hidden state, projected to e, times the e-wide
  // head.
  torch::NoGradGuard no_grad;
  const torch::Tensor tokens = Tokens();
  const torch::Tensor expected = torch::nn::functional::linear(
      torch::nn::functional::linear(wide->Hidden(tokens),
                                    wide->embedding_out->weight),
      wide->unembedding->weight);
  EXPECT_TRUE(torch::allclose(wide->forward(tokens), expected, 1e-4, 1e-5));
  // The embedding enters the blocks through the projection.
  const torch::Tensor embedded =
      wide->embedding_in->forward(wide->token_embedding->forward(tokens));
  std::vector<torch::Tensor> captured;
  wide->FindHook("hook_embed")->Add(CaptureHook(&captured));
  wide->forward(tokens);
  ASSERT_EQ(captured.size(), 1u);
  EXPECT_TRUE(torch::allclose(captured[0], embedded, 1e-5, 1e-6));
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
  // MoHD expansion x2: residual width 32, attention inner width 16 (only the
  // hidden width grows, as arXiv:2412.05644 Tables 1-2's counts require).
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

TEST(GptTest, LorsaAttentionModelIsCausalWithKActiveHeads) {
  GptOptions options = SmallOptions(true, true, "gelu_mlp");
  options.attention = "lorsa";
  options.lorsa_ov_heads = 32;  // 8 rank-1 OV heads per QK head.
  options.lorsa_top_k = 5;
  auto model = MakeModel(options);
  auto lorsa =
      std::dynamic_pointer_cast<LorsaImpl>(model->blocks[0]->attention);
  ASSERT_TRUE(lorsa);
  EXPECT_EQ(lorsa->group_size(), 8);
  const torch::Tensor tokens = Tokens();
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> inputs;
  model->FindHook("blocks.0.attn.hook_in")->Add(CaptureHook(&inputs));
  const torch::Tensor logits = model->forward(tokens);
  model->ClearHooks();
  ASSERT_EQ(inputs.size(), 1u);
  const LorsaOutput run = lorsa->Run(inputs[0], 5);
  const torch::Tensor active = (run.activations != 0).sum(-1);
  EXPECT_LE(active.max().item<int64_t>(), 5);
  torch::Tensor changed = tokens.clone();
  changed.select(1, 11).fill_(7);
  EXPECT_TRUE(torch::equal(model->forward(changed).slice(1, 0, 11),
                           logits.slice(1, 0, 11)));
  // Lorsa's FLOPs replace the MHSA's in the model total.
  const int64_t lorsa_flops = lorsa->ForwardFlopsPerToken(12);
  auto dense = MakeModel(SmallOptions(true, true, "gelu_mlp"));
  EXPECT_EQ(model->ForwardFlopsPerToken(12) - dense->ForwardFlopsPerToken(12),
            2 * (lorsa_flops -
                 dense->blocks[0]->attention->ForwardFlopsPerToken(12)));
}

// One block of 4 experts, 2 active.
config::ModelConfig MixtureConfig() {
  config::ModelConfig model = testing::TinyModelConfig(20, 16, 1);
  model.set_context_length(8);
  model.set_n_experts(4);
  model.set_top_k(2);
  return model;
}

template <typename Layer>
std::shared_ptr<Layer> FfnOf(const config::ModelConfig& model) {
  auto options = GptOptionsFromConfig(model);
  EXPECT_TRUE(options.ok()) << options.status();
  auto gpt = MakeModel(*options);
  return std::dynamic_pointer_cast<Layer>(gpt->blocks[0]->ffn);
}

TEST(GptTest, LayerOptionsInTheConfigReachTheLayers) {
  config::ModelConfig model = MixtureConfig();
  model.set_ffn("moe_x");
  auto moe = FfnOf<MixtureOfExpertsImpl>(model);
  ASSERT_TRUE(moe);
  EXPECT_FALSE(moe->options().router_sigma_is_variance);
  EXPECT_EQ(moe->options().load_balance_weight, 0.001);
  model.mutable_layer_options()->set_router_sigma(
      config::LayerOptions::VARIANCE);
  model.mutable_layer_options()->set_load_balance_weight(0.01);
  moe = FfnOf<MixtureOfExpertsImpl>(model);
  EXPECT_TRUE(moe->options().router_sigma_is_variance);
  EXPECT_EQ(moe->options().load_balance_weight, 0.01);

  model.set_ffn("skip_transcoder");
  EXPECT_FALSE(FfnOf<TranscoderImpl>(model)->options().normalise_decoder);
  model.set_ffn("mxd_gelu");
  model.set_n_experts(12);
  EXPECT_TRUE(FfnOf<MxdImpl>(model)->options().normalise_decoder);
  EXPECT_FALSE(FfnOf<MxdImpl>(model)->options().random_k);
  model.mutable_layer_options()->set_normalise_decoder(false);
  model.mutable_layer_options()->set_random_k(true);
  EXPECT_FALSE(FfnOf<MxdImpl>(model)->options().normalise_decoder);
  EXPECT_TRUE(FfnOf<MxdImpl>(model)->options().random_k);

  model = MixtureConfig();
  model.set_ffn("mohd_swiglu");
  model.set_attention("mohd");
  model.set_top_k(3);
  model.mutable_layer_options()->set_mohd_scaling(config::LayerOptions::NONE);
  model.mutable_layer_options()->set_mohd_fusion(false);
  model.mutable_layer_options()->set_mohd_shared(0);
  model.mutable_layer_options()->set_gather_sparse(true);
  auto options = GptOptionsFromConfig(model);
  ASSERT_TRUE(options.ok()) << options.status();
  auto gpt = MakeModel(*options);
  auto attention =
      std::dynamic_pointer_cast<MohdAttentionImpl>(gpt->blocks[0]->attention);
  ASSERT_TRUE(attention);
  for (const MohdOptions& mohd :
       {attention->gate->options(),
        std::dynamic_pointer_cast<MohdFfnImpl>(gpt->blocks[0]->ffn)
            ->gate->options()}) {
    EXPECT_EQ(mohd.scaling, config::LayerOptions::NONE);
    EXPECT_FALSE(mohd.fusion);
    EXPECT_EQ(mohd.shared, 0);
    EXPECT_EQ(mohd.top_k, 3);
  }
  EXPECT_TRUE(attention->gather_sparse);

  // JumpReLU's thresholds start at the config's value (0.001 when unset).
  for (const double initial : {0.0, 0.25}) {
    model = MixtureConfig();
    config::FfnReplacement* sae = model.mutable_replacement();
    sae->set_ffn("jump_relu_sae");
    sae->set_expansion(2);
    sae->set_on_output(true);
    sae->set_sparsity_penalty(0.1);
    sae->set_jump_relu_initial_threshold(initial);
    auto sae_options = GptOptionsFromConfig(model);
    ASSERT_TRUE(sae_options.ok()) << sae_options.status();
    auto fitted = std::dynamic_pointer_cast<SparseReplacementImpl>(
        MakeModel(*sae_options)->ReplacementLayer());
    ASSERT_TRUE(fitted);
    EXPECT_TRUE(torch::allclose(
        fitted->log_threshold.exp(),
        torch::full({fitted->units()}, initial > 0 ? initial : 0.001)))
        << initial;
  }
}

// What import_pretrained stores: the config of a pretrained architecture's
// options builds the same model (same draws, same logits).
TEST(GptTest, PretrainedOptionsSurviveTheConfig) {
  GptOptions gpt2 = SmallOptions(false, false, "gelu_mlp");
  gpt2.bias = true;
  gpt2.gelu_tanh = true;
  GptOptions neox = SmallOptions(true, false, "gelu_mlp");
  neox.bias = true;
  neox.parallel_residual = true;
  neox.rotary_dims = 2;
  neox.rotary_base = 500;
  neox.tie_embeddings = false;
  GptOptions nanogpt = SmallOptions(false, false, "gelu_mlp");
  nanogpt.layer_norm_without_bias = true;
  GptOptions llama = SmallOptions(true, true, "swiglu");
  llama.n_kv_heads = 2;
  llama.norm_eps = 1e-6;
  llama.rotary_scaling = {8, 1, 4, 16};
  for (const GptOptions& options : {gpt2, neox, nanogpt, llama}) {
    absl::StatusOr<config::ModelConfig> model =
        ModelConfigFromGptOptions(options);
    ASSERT_TRUE(model.ok()) << model.status();
    absl::StatusOr<GptOptions> back = GptOptionsFromConfig(*model);
    ASSERT_TRUE(back.ok()) << back.status();
    torch::NoGradGuard no_grad;
    EXPECT_TRUE(torch::equal(MakeModel(options)->forward(Tokens()),
                             MakeModel(*back)->forward(Tokens())))
        << model->DebugString();
  }
  GptOptions mohd = SmallOptions(true, false, "gelu_mlp");
  mohd.attention = "mohd";
  EXPECT_FALSE(ModelConfigFromGptOptions(mohd).ok());
}

TEST(GptTest, BadArchitectureOptionsAreRejected) {
  auto error = [](const std::function<void(config::ModelConfig&)>& edit) {
    config::ModelConfig model = *ModelConfigFromGptOptions(
        SmallOptions(/*rotary=*/true, false, "gelu_mlp"));
    edit(model);
    return std::string(GptOptionsFromConfig(model).status().message());
  };
  EXPECT_EQ(error([](config::ModelConfig& m) {
              m.mutable_architecture_options()->set_n_kv_heads(3);
            }),
            "field 'model.architecture_options.n_kv_heads': 3 must be 0 or "
            "divide n_heads 4");
  EXPECT_EQ(error([](config::ModelConfig& m) {
              m.mutable_architecture_options()->set_rotary_dims(3);
            }),
            "field 'model.architecture_options.rotary_dims': 3 must be even "
            "and in [0, head dim 4]");
  EXPECT_EQ(error([](config::ModelConfig& m) {
              m.set_ffn("swiglu");
              m.mutable_architecture_options()->set_gelu_tanh(true);
            }),
            "field 'model.architecture_options.gelu_tanh': needs ffn "
            "'gelu_mlp'");
  EXPECT_EQ(error([](config::ModelConfig& m) {
              m.set_positions(config::ModelConfig::LEARNED);
            }),
            "field 'model.architecture_options.rotary_base': needs positions: "
            "ROTARY");
  EXPECT_EQ(error([](config::ModelConfig& m) {
              m.mutable_architecture_options()->set_rotary_scaling_factor(8);
            }),
            "field 'model.architecture_options.rotary_scaling_factor': needs "
            "rotary_high_freq_factor > rotary_low_freq_factor > 0 and "
            "rotary_original_context > 0");
  EXPECT_EQ(error([](config::ModelConfig& m) {
              m.mutable_architecture_options()->set_norm_eps(-1);
            }),
            "field 'model.architecture_options.norm_eps': must be a finite "
            "number in [0, 0.5] (0 = default)");
}

TEST(GptTest, BadLayerOptionsAreRejected) {
  config::ModelConfig model = MixtureConfig();
  // Numbers no enum value names (a config built in code) are refused.
  model.mutable_layer_options()->set_router_sigma(
      static_cast<config::LayerOptions::RouterSigma>(7));
  EXPECT_EQ(GptOptionsFromConfig(model).status().message(),
            "field 'model.layer_options.router_sigma': must be one of STD, "
            "VARIANCE");
  model = MixtureConfig();
  model.mutable_layer_options()->set_mohd_scaling(
      static_cast<config::LayerOptions::MohdScaling>(9));
  EXPECT_FALSE(GptOptionsFromConfig(model).ok());
  model = MixtureConfig();
  model.set_attention("lorsa");
  model.mutable_layer_options()->set_lorsa_ov_heads(15);  // Not 2 x G.
  EXPECT_FALSE(GptOptionsFromConfig(model).ok());
  model.mutable_layer_options()->set_lorsa_ov_heads(16);
  EXPECT_TRUE(GptOptionsFromConfig(model).ok());
  model.set_attention("linear");
  EXPECT_FALSE(GptOptionsFromConfig(model).ok());
  // A wide embedding must be wider than d_model and untied.
  model = MixtureConfig();
  model.set_tie_embeddings(false);
  model.set_embedding_width(model.d_model());
  EXPECT_FALSE(GptOptionsFromConfig(model).ok());
  model.set_embedding_width(2 * model.d_model());
  EXPECT_TRUE(GptOptionsFromConfig(model).ok());
  model.set_tie_embeddings(true);
  EXPECT_FALSE(GptOptionsFromConfig(model).ok());
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
  model.set_positions(static_cast<config::ModelConfig::Positions>(5));
  EXPECT_FALSE(GptOptionsFromConfig(model).ok());
  // Head dim 5: the rotary embedding's constructor would throw.
  model.set_positions(config::ModelConfig::ROTARY);
  EXPECT_EQ(GptOptionsFromConfig(model).status().message(),
            "field 'model.positions': rotary needs an even head dim; d_model "
            "10 / n_heads 2 = 5");
  model.set_positions(config::ModelConfig::LEARNED);
  model.set_ffn("no_such_ffn");
  EXPECT_THAT(std::string(GptOptionsFromConfig(model).status().message()),
              ::testing::StartsWith(
                  "field 'model.ffn': unknown ffn 'no_such_ffn'; known: "));
  model.set_ffn("geglu");
  auto options = GptOptionsFromConfig(model);
  ASSERT_TRUE(options.ok());
  EXPECT_EQ(options->d_ffn, 40);
  model.set_ffn_alpha(16.0 / 3);  // GEGLU matched to alpha 8: 53 at d = 10.
  EXPECT_EQ(GptOptionsFromConfig(model)->d_ffn, 53);
}

// Each layer declares its shape where it registers, so the validator knows
// every linked layer, and a config naming an unlinked one fails there.
TEST(GptTest, EveryRegisteredLayerDeclaresItsShape) {
  EXPECT_EQ(config::FfnNames(), FeedForwardRegistry::Names());
  EXPECT_EQ(config::AttentionNames(), AttentionRegistry::Names());
  EXPECT_EQ(config::FindFfnShape("peer"), config::FfnShape::kProductKey);
  EXPECT_EQ(config::FindFfnShape("mxd_swiglu"), config::FfnShape::kMxd);
  EXPECT_EQ(config::FindFfnShape("mohd_swiglu"), config::FfnShape::kMohd);
  EXPECT_EQ(config::FindAttentionShape("lorsa"),
            config::AttentionShape::kLorsa);
  config::ModelConfig model;
  model.set_vocab_size(16);
  model.set_context_length(8);
  model.set_d_model(8);
  model.set_n_layers(1);
  model.set_n_heads(2);
  model.set_ffn("sgatlin");
  model.set_d_ffn(30);
  EXPECT_EQ(GptOptionsFromConfig(model).status().message(),
            "field 'model.d_ffn': sgatlin needs a perfect-square d_ffn (n^2 "
            "product-key experts), got 30");
}

}  // namespace
}  // namespace sparse_layers::layers
