#include "models/checkpoints/checkpoint_tensors.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/common/status_macros.h"

namespace sparse_layers::layers {

std::string PrefixIfPresent(const CheckpointTensors& tensors,
                            const std::string& prefix,
                            const std::string& probe) {
  return tensors.Contains(prefix + probe) ? prefix : "";
}

absl::StatusOr<torch::Tensor> TensorMap::Read(const std::string& name,
                                              const std::vector<int64_t>& shape,
                                              bool top_level) {
  const std::string full = top_level ? name : prefix_ + name;
  used_.insert(full);
  if (!files_.Contains(full)) {
    return absl::NotFoundError(
        absl::StrCat(files_.path(), ": tensor '", full, "' missing"));
  }
  return files_.ReadFloat(full, shape);
}

absl::Status TensorMap::Copy(const std::string& param, const std::string& name,
                             const std::vector<int64_t>& shape) {
  ASSIGN_OR_RETURN(params_[param], Read(name, shape));
  return absl::OkStatus();
}

absl::Status TensorMap::CheckAllUsed(const std::string& model_type) const {
  for (const auto& [name, path] : files_.All()) {
    if (used_.count(name) > 0) continue;
    bool buffer = false;
    for (const char* suffix :
         {".attn.bias", ".attn.masked_bias", ".attention.bias",
          ".attention.masked_bias", ".rotary_emb.inv_freq"}) {
      buffer = buffer || absl::EndsWith(name, suffix);
    }
    if (!buffer) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": unexpected tensor '", name, "' for model_type ",
                       model_type));
    }
  }
  return absl::OkStatus();
}

absl::Status TensorMap::CopyInto(GptImpl& model) {
  torch::NoGradGuard no_grad;
  for (auto& item : model.named_parameters()) {
    auto it = params_.find(item.key());
    if (it == params_.end() ||
        !it->second.sizes().equals(item.value().sizes())) {
      return absl::InternalError(absl::StrCat(
          files_.path(), ": no tensor of the right shape for model parameter '",
          item.key(), "'"));
    }
    item.value().copy_(it->second);
    params_.erase(it);
  }
  if (!params_.empty()) {
    return absl::InternalError(absl::StrCat(files_.path(),
                                            ": model has no parameter '",
                                            params_.begin()->first, "'"));
  }
  return absl::OkStatus();
}

absl::Status Norm(const std::string& param, const std::string& name,
                  int64_t width, bool bias, TensorMap& tensors) {
  RETURN_IF_ERROR(tensors.Copy(param + ".weight", name + ".weight", {width}));
  if (bias)
    RETURN_IF_ERROR(tensors.Copy(param + ".bias", name + ".bias", {width}));
  return absl::OkStatus();
}

absl::Status Unembedding(const GptOptions& options, const std::string& name,
                         TensorMap& tensors) {
  if (options.tie_embeddings) {
    tensors.Ignore(name);
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(torch::Tensor weight,
                   tensors.Read(name, {options.vocab_size, options.d_model},
                                /*top_level=*/true));
  tensors.Set("unembedding.weight", std::move(weight));
  return absl::OkStatus();
}

namespace {

// One projection `in` -> `out` as Linear's [out, in] weight and its bias.
absl::Status Projection(const std::string& param, const std::string& name,
                        int64_t in, int64_t out, const Gpt2Layout& layout,
                        TensorMap& tensors) {
  if (layout.conv1d) {
    ASSIGN_OR_RETURN(torch::Tensor weight,
                     tensors.Read(name + ".weight", {in, out}));
    tensors.Set(param + ".weight", weight.t().contiguous());
  } else {
    RETURN_IF_ERROR(
        tensors.Copy(param + ".weight", name + ".weight", {out, in}));
  }
  if (!layout.bias) return absl::OkStatus();
  return tensors.Copy(param + ".bias", name + ".bias", {out});
}

}  // namespace

absl::Status Gpt2Tensors(const GptOptions& o, int64_t positions,
                         const Gpt2Layout& layout, TensorMap& tensors) {
  const int64_t d = o.d_model;
  const bool bias = layout.bias;
  RETURN_IF_ERROR(
      tensors.Copy("token_embedding.weight", "wte.weight", {o.vocab_size, d}));
  ASSIGN_OR_RETURN(torch::Tensor wpe,
                   tensors.Read("wpe.weight", {positions, d}));
  tensors.Set("position_embedding.weight",
              wpe.slice(0, 0, o.context_length).contiguous());
  for (int64_t i = 0; i < o.n_layers; ++i) {
    const std::string block = absl::StrCat("block", i, ".");
    const std::string h = absl::StrCat("h.", i, ".");
    RETURN_IF_ERROR(
        Norm(block + "attention_norm", h + "ln_1", d, bias, tensors));
    RETURN_IF_ERROR(Projection(block + "attention.qkv", h + "attn.c_attn", d,
                               3 * d, layout, tensors));
    RETURN_IF_ERROR(Projection(block + "attention.out", h + "attn.c_proj", d, d,
                               layout, tensors));
    RETURN_IF_ERROR(Norm(block + "ffn_norm", h + "ln_2", d, bias, tensors));
    RETURN_IF_ERROR(Projection(block + "ffn.in", h + "mlp.c_fc", d, o.d_ffn,
                               layout, tensors));
    RETURN_IF_ERROR(Projection(block + "ffn.out", h + "mlp.c_proj", o.d_ffn, d,
                               layout, tensors));
  }
  RETURN_IF_ERROR(Norm("final_norm", "ln_f", d, bias, tensors));
  return Unembedding(o, layout.unembedding, tensors);
}

}  // namespace sparse_layers::layers
