#include "models/gpt.h"

#include "absl/strings/str_cat.h"
#include "base/common/status_macros.h"
#include "config/config_validator.h"
#include "ops/core/fused_cross_entropy.h"
#include "ops/core/parameter_count.h"
#include "ops/core/rms_norm.h"

namespace sparse_layers::layers {
namespace {

// Tokens per chunk of the fused loss: a (256, V) block stays in cache-sized
// memory; //ops/core:fused_cross_entropy_benchmark measured 256 fastest.
constexpr int64_t kCrossEntropyChunkTokens = 256;

// LayerNorm with a weight and no bias (torch::nn::LayerNorm always has both).
class BiaslessLayerNormImpl : public torch::nn::Module {
 public:
  BiaslessLayerNormImpl(int64_t dim, double eps)
      : weight(register_parameter("weight", torch::ones({dim}))), eps_(eps) {}
  torch::Tensor forward(const torch::Tensor& x) {
    return torch::layer_norm(x, {weight.size(0)}, weight, {}, eps_);
  }
  torch::Tensor weight;

 private:
  double eps_;
};
TORCH_MODULE(BiaslessLayerNorm);

torch::nn::AnyModule MakeNorm(const GptOptions& options) {
  if (options.layer_norm_without_bias && !options.rms_norm) {
    return torch::nn::AnyModule(BiaslessLayerNorm(
        options.d_model, options.norm_eps > 0 ? options.norm_eps : 1e-5));
  }
  if (options.rms_norm) {
    return options.norm_eps > 0
               ? torch::nn::AnyModule(
                     RmsNorm(options.d_model, options.norm_eps))
               : torch::nn::AnyModule(RmsNorm(options.d_model));
  }
  return torch::nn::AnyModule(torch::nn::LayerNorm(
      torch::nn::LayerNormOptions({options.d_model})
          .eps(options.norm_eps > 0 ? options.norm_eps : 1e-5)));
}

}  // namespace

absl::StatusOr<GptOptions> GptOptionsFromConfig(
    const config::ModelConfig& model) {
  // Every constraint lives in the validator that check_config and the config
  // loader run; what follows only fills in defaults.
  RETURN_IF_ERROR(config::ValidateModelConfig(model));
  GptOptions options;
  options.vocab_size = model.vocab_size();
  options.context_length = model.context_length();
  options.d_model = model.d_model();
  options.n_layers = model.n_layers();
  options.n_heads = model.n_heads();
  options.ffn = config::FfnName(model);
  options.d_ffn = config::EffectiveFfnWidth(model);
  options.n_experts = model.n_experts();
  options.top_k = model.top_k();
  options.d_key = model.d_key();
  options.attention = config::AttentionName(model);
  options.attention_inner = model.attention_inner();
  const config::LayerOptions& layer = model.layer_options();
  options.lorsa_ov_heads =
      layer.lorsa_ov_heads() > 0 ? layer.lorsa_ov_heads() : model.d_model();
  options.lorsa_top_k =
      layer.lorsa_top_k() > 0 ? layer.lorsa_top_k() : model.n_heads();
  options.lorsa_relu = !layer.has_lorsa_relu() || layer.lorsa_relu();
  LayerVariants& variants = options.variants;
  if (layer.has_normalise_decoder()) {
    variants.normalise_decoder = layer.normalise_decoder();
  }
  variants.random_k = layer.random_k();
  variants.router_sigma_is_variance =
      layer.router_sigma() == config::LayerOptions::VARIANCE;
  if (layer.has_load_balance_weight()) {
    variants.load_balance_weight = layer.load_balance_weight();
  }
  variants.mohd_scaling = layer.mohd_scaling();
  variants.mohd_fusion = !layer.has_mohd_fusion() || layer.mohd_fusion();
  variants.mohd_random_routing = layer.mohd_random_routing();
  if (layer.has_mohd_shared()) variants.mohd_shared = layer.mohd_shared();
  if (layer.has_mohd_balance_weight()) {
    variants.mohd_balance_weight = layer.mohd_balance_weight();
  }
  variants.gather_sparse = layer.gather_sparse();
  options.rotary = model.positions() == config::ModelConfig::ROTARY;
  options.rms_norm = model.norm() == config::ModelConfig::RMS_NORM;
  options.tie_embeddings = model.tie_embeddings();
  options.embedding_width = model.embedding_width();
  options.qk_norm = model.qk_norm();
  const config::ArchitectureOptions& arch = model.architecture_options();
  options.bias = arch.bias();
  options.gelu_tanh = arch.gelu_tanh();
  options.parallel_residual = arch.parallel_residual();
  options.norm_eps = arch.norm_eps();
  options.layer_norm_without_bias = arch.layer_norm_without_bias();
  options.rotary_dims = arch.rotary_dims();
  if (arch.rotary_base() > 0) options.rotary_base = arch.rotary_base();
  if (arch.rotary_scaling_factor() > 0) {
    options.rotary_scaling = {
        arch.rotary_scaling_factor(), arch.rotary_low_freq_factor(),
        arch.rotary_high_freq_factor(), arch.rotary_original_context()};
  }
  options.n_kv_heads = arch.n_kv_heads();
  if (const config::FfnReplacement& r = model.replacement(); !r.ffn().empty()) {
    const config::ReplacementSizes sizes =
        config::EffectiveReplacementSizes(model);
    options.replacement = {
        r.ffn(),
        r.layer(),
        sizes.d_ffn,
        sizes.n_experts,
        r.top_k(),
        r.on_output(),
        r.site() == config::FfnReplacement::ATTN,
        sizes.qk_heads,
        sizes.qk_dim,
        r.qk_init(),
        sizes.rank,
        config::EffectiveSparsity(r),
        r.sparsity_penalty(),
        r.jump_relu_bandwidth() > 0 ? r.jump_relu_bandwidth() : 0.001,
        r.jump_relu_initial_threshold() > 0 ? r.jump_relu_initial_threshold()
                                            : 0.001};
  }
  return options;
}

absl::StatusOr<config::ModelConfig> ModelConfigFromGptOptions(
    const GptOptions& options) {
  // Only what pretrained checkpoints use maps back; the rest has no config.
  if (options.attention != "mha" || options.replacement.layer >= 0 ||
      options.embedding_width != 0 || options.qk_norm ||
      !(options.ffn == "gelu_mlp" || options.ffn == "swiglu")) {
    return absl::InvalidArgumentError(
        "only dense pretrained-style models (mha attention, gelu_mlp or "
        "swiglu, no replacement) map back to a config");
  }
  config::ModelConfig model;
  model.set_architecture("gpt");
  model.set_vocab_size(options.vocab_size);
  model.set_context_length(options.context_length);
  model.set_d_model(options.d_model);
  model.set_n_layers(options.n_layers);
  model.set_n_heads(options.n_heads);
  model.set_ffn(options.ffn);
  model.set_d_ffn(options.d_ffn);
  model.set_positions(options.rotary ? config::ModelConfig::ROTARY
                                     : config::ModelConfig::LEARNED);
  model.set_norm(options.rms_norm ? config::ModelConfig::RMS_NORM
                                  : config::ModelConfig::LAYER_NORM);
  model.set_tie_embeddings(options.tie_embeddings);
  config::ArchitectureOptions& arch = *model.mutable_architecture_options();
  arch.set_bias(options.bias);
  arch.set_gelu_tanh(options.gelu_tanh);
  arch.set_parallel_residual(options.parallel_residual);
  arch.set_norm_eps(options.norm_eps);
  arch.set_layer_norm_without_bias(options.layer_norm_without_bias);
  if (options.rotary) {
    arch.set_rotary_dims(options.rotary_dims);
    arch.set_rotary_base(options.rotary_base);
  }
  if (options.rotary && options.rotary_scaling.factor > 0) {
    arch.set_rotary_scaling_factor(options.rotary_scaling.factor);
    arch.set_rotary_low_freq_factor(options.rotary_scaling.low_freq_factor);
    arch.set_rotary_high_freq_factor(options.rotary_scaling.high_freq_factor);
    arch.set_rotary_original_context(options.rotary_scaling.original_context);
  }
  arch.set_n_kv_heads(options.n_kv_heads);
  RETURN_IF_ERROR(config::ValidateModelConfig(model));
  return model;
}

BlockImpl::BlockImpl(const GptOptions& options, int index,
                     std::shared_ptr<AttentionImpl> attention_module,
                     std::shared_ptr<FeedForwardImpl> ffn_module)
    : parallel_residual_(options.parallel_residual) {
  const std::string prefix = absl::StrCat("blocks.", index, ".");
  hook_resid_pre = HookPoint(prefix + "hook_resid_pre");
  hook_attn_in = HookPoint(prefix + "attn.hook_in");
  hook_attn_out = HookPoint(prefix + "attn.hook_out");
  hook_resid_mid = HookPoint(prefix + "hook_resid_mid");
  hook_ffn_in = HookPoint(prefix + "ffn.hook_in");
  hook_ffn_hidden = HookPoint(prefix + "ffn.hook_hidden");
  hook_ffn_out = HookPoint(prefix + "ffn.hook_out");
  hook_sae_codes = HookPoint(prefix + "ffn.sae.hook_codes");
  hook_resid_post = HookPoint(prefix + "hook_resid_post");

  attention_norm = MakeNorm(options);
  register_module("attention_norm", attention_norm.ptr());
  attention = register_module("attention", std::move(attention_module));
  ffn_norm = MakeNorm(options);
  register_module("ffn_norm", ffn_norm.ptr());
  ffn = register_module("ffn", std::move(ffn_module));
}

torch::Tensor BlockImpl::forward(torch::Tensor residual) {
  if (hook_resid_pre.active()) residual = hook_resid_pre(residual);
  torch::Tensor attention_in = attention_norm.forward(residual);
  if (hook_attn_in.active()) attention_in = hook_attn_in(attention_in);
  torch::Tensor attention_out = attention_stand_in
                                    ? attention_stand_in->forward(attention_in)
                                    : attention->forward(attention_in);
  if (attention_sae) {
    attention_out = attention_sae->Forward(attention_out, hook_sae_codes);
  }
  if (hook_attn_out.active()) attention_out = hook_attn_out(attention_out);
  const torch::Tensor block_in = residual;
  residual = residual + attention_out;
  if (hook_resid_mid.active()) residual = hook_resid_mid(residual);
  torch::Tensor ffn_in =
      ffn_norm.forward(parallel_residual_ ? block_in : residual);
  if (hook_ffn_in.active()) ffn_in = hook_ffn_in(ffn_in);
  torch::Tensor ffn_out = ffn->Forward(ffn_in, hook_ffn_hidden);
  if (output_sae) ffn_out = output_sae->Forward(ffn_out, hook_sae_codes);
  if (hook_ffn_out.active()) ffn_out = hook_ffn_out(ffn_out);
  residual = residual + ffn_out;
  if (hook_resid_post.active()) residual = hook_resid_post(residual);
  return residual;
}

absl::StatusOr<std::shared_ptr<GptImpl>> GptImpl::Create(
    const GptOptions& options) {
  std::shared_ptr<GptImpl> model(new GptImpl(options));
  FeedForwardOptions ffn_options;
  ffn_options.d_model = options.d_model;
  ffn_options.d_ffn = options.d_ffn;
  ffn_options.n_experts = options.n_experts;
  ffn_options.top_k = options.top_k;
  ffn_options.d_key = options.d_key;
  ffn_options.n_layers = options.n_layers;
  ffn_options.variants = options.variants;
  ffn_options.bias = options.bias;
  ffn_options.gelu_tanh = options.gelu_tanh;
  const GptOptions::Replacement& replacement = options.replacement;
  FeedForwardOptions replacement_options = ffn_options;
  replacement_options.d_ffn = replacement.d_ffn;
  replacement_options.n_experts = replacement.n_experts;
  replacement_options.top_k = replacement.top_k;
  replacement_options.rank = replacement.rank;
  replacement_options.sparsity = replacement.sparsity;
  replacement_options.sparsity_penalty = replacement.sparsity_penalty;
  replacement_options.jump_relu_bandwidth = replacement.jump_relu_bandwidth;
  replacement_options.jump_relu_initial_threshold =
      replacement.jump_relu_initial_threshold;
  AttentionOptions attention_options;
  attention_options.d_model = options.d_model;
  attention_options.n_heads = options.n_heads;
  attention_options.context_length = options.context_length;
  attention_options.rotary = options.rotary;
  attention_options.qk_norm = options.qk_norm;
  attention_options.rotary_dims = options.rotary_dims;
  attention_options.rotary_base = options.rotary_base;
  attention_options.rotary_scaling = options.rotary_scaling;
  attention_options.n_kv_heads = options.n_kv_heads;
  attention_options.bias = options.bias;
  attention_options.n_layers = options.n_layers;
  attention_options.variants = options.variants;
  attention_options.n_experts = options.n_experts;
  attention_options.top_k = options.top_k;
  attention_options.inner = options.attention_inner;
  attention_options.ov_heads = options.lorsa_ov_heads;
  attention_options.lorsa_top_k = options.lorsa_top_k;
  attention_options.relu = options.lorsa_relu;
  for (int i = 0; i < options.n_layers; ++i) {
    ffn_options.hook_prefix = replacement_options.hook_prefix =
        absl::StrCat("blocks.", i, ".ffn.");
    const bool replaced = i == replacement.layer;
    const bool ffn_replaced = replaced && !replacement.attention_site;
    // The FFN before the attention: the order of their random draws.
    ASSIGN_OR_RETURN(
        std::shared_ptr<FeedForwardImpl> ffn,
        ffn_replaced && !replacement.on_output
            ? FeedForwardRegistry::Create(replacement.ffn, replacement_options)
            : FeedForwardRegistry::Create(options.ffn, ffn_options));
    attention_options.hook_prefix = absl::StrCat("blocks.", i, ".attn.");
    ASSIGN_OR_RETURN(
        std::shared_ptr<AttentionImpl> attention,
        AttentionRegistry::Create(options.attention, attention_options));
    model->blocks.push_back(model->register_module(
        absl::StrCat("block", i),
        Block(options, i, std::move(attention), std::move(ffn))));
    Block& block = model->blocks.back();
    if (replaced && replacement.attention_site && !replacement.on_output) {
      // D_QK: the base model's head dimension unless set (arXiv:2504.20938
      // Sec. 3.1; App. B's Fig. 8 varies it).
      AttentionOptions stand_in = attention_options;
      stand_in.n_heads = replacement.qk_heads;
      stand_in.qk_dim = replacement.qk_dim > 0
                            ? replacement.qk_dim
                            : options.d_model / options.n_heads;
      stand_in.ov_heads = replacement.d_ffn;
      stand_in.lorsa_top_k = replacement.top_k;
      ASSIGN_OR_RETURN(std::shared_ptr<AttentionImpl> layer,
                       AttentionRegistry::Create(replacement.ffn, stand_in));
      block->attention_stand_in =
          block->register_module("lorsa_replacement", std::move(layer));
    } else if (replaced && replacement.on_output) {
      ASSIGN_OR_RETURN(
          std::shared_ptr<FeedForwardImpl> sae,
          FeedForwardRegistry::Create(replacement.ffn, replacement_options));
      if (replacement.attention_site) {
        block->attention_sae =
            block->register_module("attention_sae", std::move(sae));
      } else {
        block->output_sae =
            block->register_module("output_sae", std::move(sae));
      }
    }
  }
  model->final_norm = MakeNorm(options);
  model->register_module("final_norm", model->final_norm.ptr());
  if (!options.tie_embeddings) {
    model->unembedding = model->register_module(
        "unembedding",
        torch::nn::Linear(torch::nn::LinearOptions(model->EmbeddingWidth(),
                                                   options.vocab_size)
                              .bias(false)));
    torch::NoGradGuard no_grad;
    torch::nn::init::normal_(model->unembedding->weight, 0.0, 0.02);
  }
  if (options.embedding_width > 0) {
    model->embedding_out = model->register_module(
        "embedding_out",
        torch::nn::Linear(
            torch::nn::LinearOptions(options.d_model, options.embedding_width)
                .bias(false)));
  }
  model->hooks_["hook_embed"] = &model->hook_embed;
  model->hooks_["hook_final"] = &model->hook_final;
  for (Block& block : model->blocks) {
    for (HookPoint* hook :
         {&block->hook_resid_pre, &block->hook_attn_in, &block->hook_attn_out,
          &block->hook_resid_mid, &block->hook_ffn_in, &block->hook_ffn_hidden,
          &block->hook_ffn_out, &block->hook_sae_codes,
          &block->hook_resid_post}) {
      model->hooks_[hook->name()] = hook;
    }
    for (HookPoint* hook : block->attention->HookPoints()) {
      model->hooks_[hook->name()] = hook;
    }
    for (HookPoint* hook : block->ffn->HookPoints()) {
      model->hooks_[hook->name()] = hook;
    }
  }
  return model;
}

GptImpl::GptImpl(const GptOptions& options)
    : hook_embed("hook_embed"), hook_final("hook_final"), options_(options) {
  token_embedding = register_module(
      "token_embedding",
      torch::nn::Embedding(options.vocab_size, EmbeddingWidth()));
  torch::NoGradGuard no_grad;
  torch::nn::init::normal_(token_embedding->weight, 0.0, 0.02);
  if (!options.rotary) {
    position_embedding = register_module(
        "position_embedding",
        torch::nn::Embedding(options.context_length, options.d_model));
    torch::nn::init::normal_(position_embedding->weight, 0.0, 0.01);
  }
  if (options.embedding_width > 0) {
    embedding_in = register_module(
        "embedding_in",
        torch::nn::Linear(
            torch::nn::LinearOptions(options.embedding_width, options.d_model)
                .bias(false)));
  }
}

torch::Tensor GptImpl::Hidden(const torch::Tensor& tokens) {
  TORCH_CHECK(tokens.dim() == 2, "tokens must be (B, T)");
  const int64_t length = tokens.size(1);
  TORCH_CHECK(length <= options_.context_length,
              "sequence longer than the context length");
  torch::Tensor x = token_embedding->forward(tokens);
  if (embedding_in) x = embedding_in->forward(x);
  if (position_embedding) {
    x = x + position_embedding->weight.slice(0, 0, length);
  }
  if (hook_embed.active()) x = hook_embed(x);
  for (Block& block : blocks) x = block->forward(x);
  x = final_norm.forward(x);
  if (hook_final.active()) x = hook_final(x);
  return x;
}

torch::Tensor GptImpl::UnembeddingWeight() const {
  if (options_.tie_embeddings) return token_embedding->weight;
  // (vocab, E) x (E, d_model): the wide head read from the blocks' width.
  return embedding_out ? unembedding->weight.matmul(embedding_out->weight)
                       : unembedding->weight;
}

torch::Tensor GptImpl::forward(const torch::Tensor& tokens) {
  return torch::nn::functional::linear(Hidden(tokens), UnembeddingWeight());
}

torch::Tensor GptImpl::CrossEntropy(const torch::Tensor& tokens,
                                    const torch::Tensor& targets) {
  // Chunked unembedding + loss: the (B*T, vocab) logits and their gradient
  // never exist, and the backward reuses the forward's logits.
  return FusedCrossEntropy(Hidden(tokens), UnembeddingWeight(), targets,
                           kCrossEntropyChunkTokens);
}

torch::Tensor GptImpl::Loss(const torch::Tensor& tokens,
                            const torch::Tensor& targets) {
  torch::Tensor loss = CrossEntropy(tokens, targets);
  for (Block& block : blocks) {
    for (const torch::Tensor& auxiliary :
         {block->ffn->AuxiliaryLoss(), block->attention->AuxiliaryLoss()}) {
      if (auxiliary.defined()) loss = loss + auxiliary;
    }
  }
  return loss;
}

HookPoint* GptImpl::FindHook(const std::string& name) {
  auto it = hooks_.find(name);
  return it == hooks_.end() ? nullptr : it->second;
}

std::vector<std::string> GptImpl::HookNames() const {
  std::vector<std::string> names;
  for (const auto& [name, hook] : hooks_) names.push_back(name);
  return names;
}

void GptImpl::ClearHooks() {
  for (auto& [name, hook] : hooks_) hook->Clear();
}

void GptImpl::PrepareStep() {
  for (Block& block : blocks) {
    for (auto* layer : {block->ffn.get(), block->output_sae.get(),
                        block->attention_sae.get()}) {
      if (layer != nullptr) layer->PrepareStep();
    }
  }
}

void GptImpl::AdjustGradients() {
  for (Block& block : blocks) {
    for (auto* layer : {block->ffn.get(), block->output_sae.get(),
                        block->attention_sae.get()}) {
      if (layer != nullptr) layer->AdjustGradients();
    }
  }
}

std::shared_ptr<FeedForwardImpl> GptImpl::ReplacementLayer() const {
  const int64_t layer = options_.replacement.layer;
  if (layer < 0) return nullptr;
  if (options_.replacement.attention_site) {
    return blocks.at(layer)->attention_sae;  // Null for a Lorsa.
  }
  return options_.replacement.on_output ? blocks.at(layer)->output_sae
                                        : blocks.at(layer)->ffn;
}

Lorsa GptImpl::LorsaReplacement() const {
  const int64_t layer = options_.replacement.layer;
  if (layer < 0 || !options_.replacement.attention_site) return nullptr;
  return Lorsa(std::dynamic_pointer_cast<LorsaImpl>(
      blocks.at(layer)->attention_stand_in));
}

int64_t GptImpl::ParameterCount() const { return CountParameters(*this); }

int64_t GptImpl::ForwardFlopsPerToken(int64_t sequence_length) const {
  const int64_t width = EmbeddingWidth();
  return 2 * width * options_.vocab_size +  // Unembedding.
         (options_.embedding_width > 0
              ? 4 * width * options_.d_model  // Projections in and out.
              : 0) +
         BlockFlopsPerToken(sequence_length);
}

int64_t GptImpl::BlockFlopsPerToken(int64_t sequence_length) const {
  int64_t flops = 0;
  for (const Block& block : blocks) {
    const std::shared_ptr<AttentionImpl>& attention =
        block->attention_stand_in ? block->attention_stand_in
                                  : block->attention;
    flops +=
        attention->ForwardFlopsPerToken(sequence_length) +
        block->ffn->ForwardFlopsPerToken() +
        (block->output_sae ? block->output_sae->ForwardFlopsPerToken() : 0) +
        (block->attention_sae ? block->attention_sae->ForwardFlopsPerToken()
                              : 0);
  }
  return flops;
}

}  // namespace sparse_layers::layers
