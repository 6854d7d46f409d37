#include "models/checkpoints/hf_checkpoint.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "base/common/file_io.h"
#include "base/common/status_macros.h"
#include "google/protobuf/struct.pb.h"
#include "models/checkpoints/checkpoint_tensors.h"
#include "models/checkpoints/json_config.h"
#include "models/checkpoints/safetensors.h"

namespace sparse_layers::layers {
namespace {

using google::protobuf::Struct;
using google::protobuf::Value;

// hidden_act / activation_function: true for GELU's tanh approximation.
absl::StatusOr<bool> GeluTanh(const ConfigFields& config,
                              const std::string& field,
                              const std::string& fallback) {
  ASSIGN_OR_RETURN(const std::string act, config.String(field, fallback));
  if (act == "gelu") return false;
  if (act == "gelu_new" || act == "gelu_pytorch_tanh") return true;
  return config.Error(field, absl::StrCat("'", act,
                                          "' is not supported (gelu, "
                                          "gelu_new, gelu_pytorch_tanh)"));
}

// The sizes every architecture shares; returns the uncapped context length.
absl::StatusOr<int64_t> ReadSizes(const ConfigFields& config, const char* vocab,
                                  const char* width, const char* layers,
                                  const char* heads, const char* context,
                                  int64_t max_context_length,
                                  GptOptions& options) {
  ASSIGN_OR_RETURN(options.vocab_size, config.PositiveInt(vocab));
  ASSIGN_OR_RETURN(options.d_model, config.PositiveInt(width));
  ASSIGN_OR_RETURN(options.n_layers, config.PositiveInt(layers));
  ASSIGN_OR_RETURN(options.n_heads, config.PositiveInt(heads));
  ASSIGN_OR_RETURN(const int64_t positions, config.PositiveInt(context));
  options.context_length = std::min(positions, max_context_length);
  if (options.d_model % options.n_heads != 0) {
    return config.Error(
        width, absl::StrCat(options.d_model, " is not a multiple of ", heads,
                            " ", options.n_heads));
  }
  return positions;
}

// The sizes under the names GPT-NeoX and Llama configs share.
absl::Status ReadSharedSizes(const ConfigFields& config,
                             int64_t max_context_length, GptOptions& options) {
  RETURN_IF_ERROR(ReadSizes(config, "vocab_size", "hidden_size",
                            "num_hidden_layers", "num_attention_heads",
                            "max_position_embeddings", max_context_length,
                            options)
                      .status());
  ASSIGN_OR_RETURN(options.d_ffn, config.PositiveInt("intermediate_size"));
  return absl::OkStatus();
}

// GPT-2 (Radford et al. 2019): learned positions, LayerNorm and biases
// everywhere, a 4x GELU (tanh) MLP, tied unembedding.
absl::StatusOr<GptOptions> Gpt2Options(const ConfigFields& config,
                                       int64_t max_context_length) {
  GptOptions options;
  RETURN_IF_ERROR(ReadSizes(config, "vocab_size", "n_embd", "n_layer", "n_head",
                            "n_positions", max_context_length, options)
                      .status());
  ASSIGN_OR_RETURN(options.d_ffn,
                   config.PositiveInt("n_inner", 4 * options.d_model));
  ASSIGN_OR_RETURN(options.gelu_tanh,
                   GeluTanh(config, "activation_function", "gelu_new"));
  ASSIGN_OR_RETURN(options.norm_eps,
                   config.PositiveNumber("layer_norm_epsilon", 1e-5));
  ASSIGN_OR_RETURN(options.tie_embeddings,
                   config.Bool("tie_word_embeddings", true));
  RETURN_IF_ERROR(config.RequireBool("scale_attn_weights", true, true));
  RETURN_IF_ERROR(
      config.RequireBool("scale_attn_by_inverse_layer_idx", false, false));
  options.ffn = "gelu_mlp";
  options.bias = true;
  return options;
}

// GPT-NeoX / Pythia (Black et al. 2022, arXiv:2204.06745): rotary on a
// fraction of each head, parallel attention and MLP, biases, untied output.
absl::StatusOr<GptOptions> NeoXOptions(const ConfigFields& config,
                                       int64_t max_context_length) {
  GptOptions options;
  RETURN_IF_ERROR(ReadSharedSizes(config, max_context_length, options));
  ASSIGN_OR_RETURN(options.gelu_tanh, GeluTanh(config, "hidden_act", "gelu"));
  ASSIGN_OR_RETURN(options.norm_eps,
                   config.PositiveNumber("layer_norm_eps", 1e-5));
  ASSIGN_OR_RETURN(options.tie_embeddings,
                   config.Bool("tie_word_embeddings", false));
  ASSIGN_OR_RETURN(options.parallel_residual,
                   config.Bool("use_parallel_residual", true));
  RETURN_IF_ERROR(config.RequireBool("attention_bias", true, true));
  if (config.Has("rope_scaling")) {
    return config.Error("rope_scaling", "is not supported for gpt_neox");
  }
  // Older configs spell them rotary_pct and rotary_emb_base.
  const char* fraction_field = config.Has("partial_rotary_factor")
                                   ? "partial_rotary_factor"
                                   : "rotary_pct";
  ASSIGN_OR_RETURN(const double fraction,
                   config.PositiveNumber(fraction_field, 0.25));
  const char* base_field =
      config.Has("rope_theta") ? "rope_theta" : "rotary_emb_base";
  ASSIGN_OR_RETURN(options.rotary_base,
                   config.PositiveNumber(base_field, 10000));
  const int64_t head_dim = options.d_model / options.n_heads;
  options.rotary_dims = static_cast<int64_t>(head_dim * fraction);
  if (fraction > 1 || options.rotary_dims < 2 || options.rotary_dims % 2 != 0) {
    return config.Error(
        fraction_field,
        absl::StrCat(fraction, " of head dim ", head_dim, " gives ",
                     options.rotary_dims,
                     " rotary dims; need an even number in [2, head dim]"));
  }
  options.ffn = "gelu_mlp";
  options.rotary = true;
  options.bias = true;
  return options;
}

// Llama (Touvron et al. 2023, arXiv:2302.13971; Llama 3, arXiv:2407.21783):
// RMSNorm, SwiGLU, rotary positions, grouped-query attention, no biases.
absl::StatusOr<GptOptions> LlamaOptions(const ConfigFields& config,
                                        int64_t max_context_length) {
  GptOptions options;
  RETURN_IF_ERROR(ReadSharedSizes(config, max_context_length, options));
  ASSIGN_OR_RETURN(const int64_t kv_heads,
                   config.PositiveInt("num_key_value_heads", options.n_heads));
  if (options.n_heads % kv_heads != 0) {
    return config.Error(
        "num_key_value_heads",
        absl::StrCat(kv_heads, " does not divide num_attention_heads ",
                     options.n_heads));
  }
  if (kv_heads != options.n_heads) options.n_kv_heads = kv_heads;
  const int64_t head_dim = options.d_model / options.n_heads;
  ASSIGN_OR_RETURN(const int64_t config_head_dim,
                   config.PositiveInt("head_dim", head_dim));
  if (config_head_dim != head_dim) {
    return config.Error(
        "head_dim", absl::StrCat(config_head_dim,
                                 " is not hidden_size / num_attention_heads ",
                                 head_dim, " (unsupported)"));
  }
  if (head_dim % 2 != 0) {
    return config.Error("num_attention_heads",
                        absl::StrCat("gives an odd head dim ", head_dim,
                                     "; rotary positions need an even one"));
  }
  ASSIGN_OR_RETURN(const std::string act, config.String("hidden_act", "silu"));
  if (act != "silu") {
    return config.Error("hidden_act",
                        absl::StrCat("'", act, "' is not supported (silu)"));
  }
  ASSIGN_OR_RETURN(options.norm_eps,
                   config.PositiveNumber("rms_norm_eps", 1e-6));
  ASSIGN_OR_RETURN(options.tie_embeddings,
                   config.Bool("tie_word_embeddings", false));
  ASSIGN_OR_RETURN(options.rotary_base,
                   config.PositiveNumber("rope_theta", 10000));
  RETURN_IF_ERROR(config.RequireBool("attention_bias", false, false));
  RETURN_IF_ERROR(config.RequireBool("mlp_bias", false, false));
  if (config.Has("rope_scaling")) {
    ASSIGN_OR_RETURN(const ConfigFields scaling, config.Object("rope_scaling"));
    const char* type_field = scaling.Has("rope_type") ? "rope_type" : "type";
    ASSIGN_OR_RETURN(const std::string type, scaling.String(type_field));
    if (type == "llama3") {
      RotaryScaling& s = options.rotary_scaling;
      ASSIGN_OR_RETURN(s.factor, scaling.PositiveNumber("factor"));
      ASSIGN_OR_RETURN(s.low_freq_factor,
                       scaling.PositiveNumber("low_freq_factor"));
      ASSIGN_OR_RETURN(s.high_freq_factor,
                       scaling.PositiveNumber("high_freq_factor"));
      ASSIGN_OR_RETURN(s.original_context,
                       scaling.PositiveInt("original_max_position_embeddings"));
      if (s.high_freq_factor <= s.low_freq_factor) {
        return scaling.Error("high_freq_factor", "must exceed low_freq_factor");
      }
    } else if (type != "default") {
      return scaling.Error(
          type_field,
          absl::StrCat("'", type, "' is not supported (llama3, default)"));
    }
  }
  options.ffn = "swiglu";
  options.rms_norm = true;
  options.rotary = true;
  return options;
}

// A checkpoint's tensors: one model.safetensors, or the shards that
// model.safetensors.index.json's weight_map assigns each name to.
class CheckpointFiles : public CheckpointTensors {
 public:
  static absl::StatusOr<CheckpointFiles> Open(const std::string& dir) {
    CheckpointFiles files;
    const std::string single = dir + "/model.safetensors";
    const std::string index = single + ".index.json";
    if (access(single.c_str(), F_OK) == 0 || access(index.c_str(), F_OK) != 0) {
      files.path_ = single;
      ASSIGN_OR_RETURN(std::unique_ptr<SafetensorsFile> file,
                       SafetensorsFile::Open(single));
      for (const std::string& name : file->Names()) {
        files.owner_[name] = file.get();
      }
      files.shards_.push_back(std::move(file));
      return files;
    }
    files.path_ = index;
    ASSIGN_OR_RETURN(const Struct root, ReadJsonObject(index));
    auto map = root.fields().find("weight_map");
    if (map == root.fields().end() ||
        map->second.kind_case() != Value::kStructValue) {
      return absl::InvalidArgumentError(
          absl::StrCat(index, ": no weight_map object"));
    }
    std::map<std::string, SafetensorsFile*> by_shard;
    for (const auto& [name, shard] : map->second.struct_value().fields()) {
      if (shard.kind_case() != Value::kStringValue ||
          shard.string_value().empty() ||
          absl::StrContains(shard.string_value(), '/')) {
        return absl::InvalidArgumentError(
            absl::StrCat(index, ": weight_map entry '", name,
                         "' is not a file name in the directory"));
      }
      SafetensorsFile*& file = by_shard[shard.string_value()];
      if (file == nullptr) {
        ASSIGN_OR_RETURN(
            std::unique_ptr<SafetensorsFile> opened,
            SafetensorsFile::Open(dir + "/" + shard.string_value()));
        file = opened.get();
        files.shards_.push_back(std::move(opened));
      }
      if (!file->Contains(name)) {
        return absl::InvalidArgumentError(
            absl::StrCat(index, ": weight_map puts '", name, "' in ",
                         shard.string_value(), ", which lacks it"));
      }
      files.owner_[name] = file;
    }
    return files;
  }

  // What a missing tensor's error names: model.safetensors or the index.
  const std::string& path() const override { return path_; }
  bool Contains(const std::string& name) const override {
    return owner_.count(name) > 0;
  }
  absl::StatusOr<torch::Tensor> ReadFloat(
      const std::string& name,
      const std::vector<int64_t>& shape) const override {
    return owner_.at(name)->ReadFloat(name, shape);
  }
  std::vector<std::pair<std::string, std::string>> All() const override {
    std::vector<std::pair<std::string, std::string>> all;
    for (const auto& shard : shards_) {
      for (const std::string& name : shard->Names()) {
        all.emplace_back(name, shard->path());
      }
    }
    return all;
  }

 private:
  std::string path_;
  std::vector<std::unique_ptr<SafetensorsFile>> shards_;
  std::map<std::string, const SafetensorsFile*> owner_;
};

// GPT-NeoX's fused query_key_value rows are per head [q, k, v]
// (arXiv:2204.06745); the model's qkv wants [q of all heads, k, v].
torch::Tensor HeadsToBlocks(const torch::Tensor& t, int64_t heads) {
  std::vector<int64_t> shape = {heads, 3, t.size(0) / (3 * heads)};
  if (t.dim() == 2) shape.push_back(t.size(1));
  return t.reshape(shape).transpose(0, 1).reshape(t.sizes()).contiguous();
}

absl::Status NeoXTensors(const GptOptions& o, TensorMap& tensors) {
  const int64_t d = o.d_model;
  RETURN_IF_ERROR(tensors.Copy("token_embedding.weight", "embed_in.weight",
                               {o.vocab_size, d}));
  for (int64_t i = 0; i < o.n_layers; ++i) {
    const std::string block = absl::StrCat("block", i, ".");
    const std::string layer = absl::StrCat("layers.", i, ".");
    RETURN_IF_ERROR(Norm(block + "attention_norm", layer + "input_layernorm", d,
                         true, tensors));
    ASSIGN_OR_RETURN(
        torch::Tensor qkv,
        tensors.Read(layer + "attention.query_key_value.weight", {3 * d, d}));
    tensors.Set(block + "attention.qkv.weight", HeadsToBlocks(qkv, o.n_heads));
    ASSIGN_OR_RETURN(
        torch::Tensor qkv_bias,
        tensors.Read(layer + "attention.query_key_value.bias", {3 * d}));
    tensors.Set(block + "attention.qkv.bias",
                HeadsToBlocks(qkv_bias, o.n_heads));
    RETURN_IF_ERROR(tensors.Copy(block + "attention.out.weight",
                                 layer + "attention.dense.weight", {d, d}));
    RETURN_IF_ERROR(tensors.Copy(block + "attention.out.bias",
                                 layer + "attention.dense.bias", {d}));
    RETURN_IF_ERROR(Norm(block + "ffn_norm", layer + "post_attention_layernorm",
                         d, true, tensors));
    RETURN_IF_ERROR(tensors.Copy(block + "ffn.in.weight",
                                 layer + "mlp.dense_h_to_4h.weight",
                                 {o.d_ffn, d}));
    RETURN_IF_ERROR(tensors.Copy(block + "ffn.in.bias",
                                 layer + "mlp.dense_h_to_4h.bias", {o.d_ffn}));
    RETURN_IF_ERROR(tensors.Copy(block + "ffn.out.weight",
                                 layer + "mlp.dense_4h_to_h.weight",
                                 {d, o.d_ffn}));
    RETURN_IF_ERROR(tensors.Copy(block + "ffn.out.bias",
                                 layer + "mlp.dense_4h_to_h.bias", {d}));
  }
  RETURN_IF_ERROR(Norm("final_norm", "final_layer_norm", d, true, tensors));
  return Unembedding(o, "embed_out.weight", tensors);
}

absl::Status LlamaTensors(const GptOptions& o, TensorMap& tensors) {
  const int64_t d = o.d_model;
  const int64_t head_dim = d / o.n_heads;
  const int64_t kv_width =
      (o.n_kv_heads > 0 ? o.n_kv_heads : o.n_heads) * head_dim;
  RETURN_IF_ERROR(tensors.Copy("token_embedding.weight", "embed_tokens.weight",
                               {o.vocab_size, d}));
  for (int64_t i = 0; i < o.n_layers; ++i) {
    const std::string block = absl::StrCat("block", i, ".");
    const std::string layer = absl::StrCat("layers.", i, ".");
    RETURN_IF_ERROR(Norm(block + "attention_norm", layer + "input_layernorm", d,
                         false, tensors));
    ASSIGN_OR_RETURN(torch::Tensor q,
                     tensors.Read(layer + "self_attn.q_proj.weight", {d, d}));
    ASSIGN_OR_RETURN(
        torch::Tensor k,
        tensors.Read(layer + "self_attn.k_proj.weight", {kv_width, d}));
    ASSIGN_OR_RETURN(
        torch::Tensor v,
        tensors.Read(layer + "self_attn.v_proj.weight", {kv_width, d}));
    tensors.Set(block + "attention.qkv.weight", torch::cat({q, k, v}, 0));
    RETURN_IF_ERROR(tensors.Copy(block + "attention.out.weight",
                                 layer + "self_attn.o_proj.weight", {d, d}));
    RETURN_IF_ERROR(Norm(block + "ffn_norm", layer + "post_attention_layernorm",
                         d, false, tensors));
    RETURN_IF_ERROR(tensors.Copy(block + "ffn.gate.weight",
                                 layer + "mlp.gate_proj.weight", {o.d_ffn, d}));
    RETURN_IF_ERROR(tensors.Copy(block + "ffn.up.weight",
                                 layer + "mlp.up_proj.weight", {o.d_ffn, d}));
    RETURN_IF_ERROR(tensors.Copy(block + "ffn.down.weight",
                                 layer + "mlp.down_proj.weight", {d, o.d_ffn}));
  }
  RETURN_IF_ERROR(Norm("final_norm", "norm", d, false, tensors));
  return Unembedding(o, "lm_head.weight", tensors);
}

struct Config {
  std::string model_type;
  GptOptions options;
  int64_t positions = 0;  // config.json's context length, uncapped.
};

absl::StatusOr<Config> ReadConfig(const std::string& path,
                                  int64_t max_context_length) {
  ASSIGN_OR_RETURN(const Struct root, ReadJsonObject(path));
  const ConfigFields config(path, root);
  Config result;
  ASSIGN_OR_RETURN(result.model_type, config.String("model_type"));
  const std::string& type = result.model_type;
  if (type == "gpt2") {
    ASSIGN_OR_RETURN(result.options, Gpt2Options(config, max_context_length));
    ASSIGN_OR_RETURN(result.positions, config.PositiveInt("n_positions"));
  } else if (type == "gpt_neox") {
    ASSIGN_OR_RETURN(result.options, NeoXOptions(config, max_context_length));
  } else if (type == "llama") {
    ASSIGN_OR_RETURN(result.options, LlamaOptions(config, max_context_length));
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": model_type '", type,
        "' is not supported (supported: ", kSupportedHuggingFaceTypes, ")"));
  }
  return result;
}

}  // namespace

absl::StatusOr<GptOptions> HuggingFaceOptions(const std::string& config_path,
                                              int64_t max_context_length) {
  ASSIGN_OR_RETURN(Config config, ReadConfig(config_path, max_context_length));
  return config.options;
}

absl::StatusOr<HuggingFaceModel> LoadHuggingFaceModel(
    const std::string& dir, int64_t max_context_length) {
  if (max_context_length < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "max_context_length must be >= 1, got ", max_context_length));
  }
  ASSIGN_OR_RETURN(const Config config,
                   ReadConfig(dir + "/config.json", max_context_length));
  ASSIGN_OR_RETURN(const CheckpointFiles files, CheckpointFiles::Open(dir));
  const GptOptions& options = config.options;
  const std::string& type = config.model_type;
  // Base-model files lack the causal-LM wrapper's prefix.
  const std::string probe = type == "gpt2"       ? "wte.weight"
                            : type == "gpt_neox" ? "embed_in.weight"
                                                 : "embed_tokens.weight";
  const std::string prefix = type == "gpt2"       ? "transformer."
                             : type == "gpt_neox" ? "gpt_neox."
                                                  : "model.";
  TensorMap tensors(files, PrefixIfPresent(files, prefix, probe));
  if (type == "gpt2") {
    RETURN_IF_ERROR(
        Gpt2Tensors(options, config.positions, Gpt2Layout(), tensors));
  } else if (type == "gpt_neox") {
    RETURN_IF_ERROR(NeoXTensors(options, tensors));
  } else {
    RETURN_IF_ERROR(LlamaTensors(options, tensors));
  }
  RETURN_IF_ERROR(tensors.CheckAllUsed(type));
  ASSIGN_OR_RETURN(std::shared_ptr<GptImpl> model, GptImpl::Create(options));
  RETURN_IF_ERROR(tensors.CopyInto(*model));
  model->eval();
  return HuggingFaceModel{type, std::move(model)};
}

}  // namespace sparse_layers::layers
