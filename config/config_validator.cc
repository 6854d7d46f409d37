#include "config/config_validator.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/common/status_macros.h"
#include "config/layer_shapes.h"
#include "config/parameter_matching.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/generated_enum_reflection.h"

namespace sparse_layers::config {
namespace {

// Upper bounds far above every scale (paper: d_model 1024, context 1024), low
// enough that a typo fails here instead of in a terabyte allocation.
constexpr int64_t kMaxWidth = int64_t{1} << 20;
// Token shards store ids as uint16, or uint32 above 65,536 pieces
// (datasets/text/token_shards.h); Llama 3 has 128,256.
constexpr int64_t kMaxVocabulary = int64_t{1} << 18;
constexpr int64_t kMaxLayers = 4096;
constexpr int64_t kMaxThreads = 1024;
// The low-rank CP-MoE baseline, the one replacement with a decoder rank.
constexpr char kCpMoe[] = "cp_moe";

// NaN fails every comparison, so ranges are written as what is accepted.
bool InRange(double value, double low, double high) {
  return value >= low && value <= high;
}

std::string OneOf(std::initializer_list<absl::string_view> choices) {
  return absl::StrCat("must be ",
                      absl::StrJoin(choices.begin(), choices.end(), ", ",
                                    [](std::string* out, absl::string_view c) {
                                      absl::StrAppend(out, "\"", c, "\"");
                                    }));
}

// An enum field holding a number its enum does not name (a config written in
// code, or binary input): "must be one of A, B".
template <typename Enum>
bool IsNamed(Enum value) {
  return google::protobuf::GetEnumDescriptor<Enum>()->FindValueByNumber(
             value) != nullptr;
}

template <typename Enum>
std::string OneOfEnum() {
  const google::protobuf::EnumDescriptor* e =
      google::protobuf::GetEnumDescriptor<Enum>();
  std::vector<std::string> names;
  for (int i = 0; i < e->value_count(); ++i)
    names.push_back(e->value(i)->name());
  return absl::StrCat("must be one of ", absl::StrJoin(names, ", "));
}

// MoHD (attention or FFN): N sub-dims of width d_model / N, K active, S shared.
absl::Status CheckMohd(const ModelConfig& model, absl::string_view user,
                       const FieldErrorFn& error) {
  const int64_t n = model.n_experts(), k = model.top_k();
  if (n <= 0) {
    return error({"model", "n_experts"},
                 absl::StrCat(user, " needs n_experts (sub-dims N) > 0"));
  }
  if (model.d_model() % n != 0) {
    return error({"model", "n_experts"},
                 absl::StrFormat("d_model %d is not divisible by n_experts %d",
                                 model.d_model(), n));
  }
  if (k < 1 || k > n) {
    return error(
        {"model", "top_k"},
        absl::StrFormat("%s needs top_k in [1, n_experts %d]", user, n));
  }
  const LayerOptions& layer = model.layer_options();
  const int64_t shared = layer.has_mohd_shared() ? layer.mohd_shared()
                                                 : std::max<int64_t>(0, k - 1);
  if (shared > k) {
    return error(
        {"model", "layer_options", "mohd_shared"},
        absl::StrFormat("%d shared sub-dims exceed top_k %d", shared, k));
  }
  return absl::OkStatus();
}

// The FFN `name` at width `d_ffn` with `n_experts` and `top_k`, set in
// model.replacement when `replacement`, else in model.
// `top_k` is unchecked for a replacement whose sparsity rule has no K.
absl::Status CheckFfn(const ModelConfig& model, const std::string& name,
                      int64_t d_ffn, int64_t n_experts, int64_t top_k,
                      bool replacement, const FieldErrorFn& error,
                      bool needs_top_k = true) {
  auto at = [&](absl::string_view leaf, absl::string_view text) {
    return replacement ? error({"model", "replacement", leaf}, text)
                       : error({"model", leaf}, text);
  };
  const std::optional<FfnShape> shape = FindFfnShape(name);
  if (!shape.has_value()) {
    return at("ffn", absl::StrCat("unknown ffn '", name, "'; known: ",
                                  absl::StrJoin(FfnNames(), ", ")));
  }
  if (d_ffn <= 0 || d_ffn > kMaxWidth) {
    return at("d_ffn", absl::StrFormat("the %s width %d must be in [1, %d]",
                                       name, d_ffn, kMaxWidth));
  }
  switch (*shape) {
    case FfnShape::kDense:
      return absl::OkStatus();
    case FfnShape::kMixture:
      if (n_experts <= 0) {
        return at("n_experts", absl::StrCat(name, " needs n_experts > 0"));
      }
      if (top_k < 1 || top_k > n_experts) {
        return at("top_k",
                  absl::StrFormat("%s needs top_k in [1, n_experts %d], got %d",
                                  name, n_experts, top_k));
      }
      return absl::OkStatus();
    case FfnShape::kProductKey: {
      const int64_t n = std::llround(std::sqrt(static_cast<double>(d_ffn)));
      if (n * n != d_ffn) {
        return at("d_ffn",
                  absl::StrFormat("%s needs a perfect-square d_ffn (n^2 "
                                  "product-key experts), got %d",
                                  name, d_ffn));
      }
      const int64_t k = top_k > 0 ? top_k : 8;
      if (k >= n) {
        return at("top_k",
                  absl::StrFormat("%s needs top_k %d below sqrt(d_ffn) = %d",
                                  name, k, n));
      }
      return absl::OkStatus();
    }
    case FfnShape::kMohd:
      return CheckMohd(model, name, error);
    case FfnShape::kMxd:
      if (n_experts <= 0) {
        return at("n_experts",
                  replacement ? absl::StrCat(name,
                                             " needs n_experts > 0, or an "
                                             "expansion whose Transcoder is "
                                             "larger than the MxD's MLP")
                              : absl::StrCat(name, " needs n_experts > 0"));
      }
      [[fallthrough]];
    case FfnShape::kTopK:
      if (!needs_top_k) return absl::OkStatus();
      if (top_k < 1 || top_k > d_ffn) {
        return at("top_k",
                  absl::StrFormat("%s needs top_k in [1, d_ffn %d], got %d",
                                  name, d_ffn, top_k));
      }
      return absl::OkStatus();
  }
  return absl::OkStatus();
}

// The sparsity rule and its settings: one way to name it (an SAE name or the
// field), a penalty exactly where the rule has one, no K where it has none.
template <typename At>
absl::Status CheckSparsity(const FfnReplacement& r, const At& at) {
  if (!IsNamed(r.sparsity())) {
    return at("sparsity", OneOfEnum<FfnReplacement::Sparsity>());
  }
  if (r.sparsity() != FfnReplacement::TOPK &&
      (r.ffn() == "lorsa" || absl::EndsWith(r.ffn(), "_sae"))) {
    return at("sparsity",
              absl::StrCat("'", r.ffn(),
                           "' fixes its sparsity by its name (topk_sae, "
                           "batch_topk_sae, relu_sae, jump_relu_sae); leave "
                           "sparsity unset"));
  }
  const FfnReplacement::Sparsity sparsity = EffectiveSparsity(r);
  const bool penalised = sparsity == FfnReplacement::RELU_L1 ||
                         sparsity == FfnReplacement::JUMP_RELU;
  const std::string rule = FfnReplacement::Sparsity_Name(sparsity);
  // 0 describes an imported SAE; training one refuses it (pipelines/train).
  if (penalised &&
      !(r.sparsity_penalty() >= 0 && std::isfinite(r.sparsity_penalty()))) {
    return at("sparsity_penalty",
              absl::StrCat(rule, " needs a finite sparsity_penalty >= 0, got ",
                           r.sparsity_penalty()));
  }
  if (!penalised && r.sparsity_penalty() != 0) {
    return at("sparsity_penalty",
              absl::StrCat(rule,
                           " has no penalty; only RELU_L1 and "
                           "JUMP_RELU take sparsity_penalty"));
  }
  if (penalised && r.top_k() != 0) {
    return at("top_k", absl::StrCat(rule,
                                    " sets no K (its penalty sets the "
                                    "sparsity); leave top_k unset"));
  }
  if (sparsity == FfnReplacement::JUMP_RELU
          ? !(r.jump_relu_bandwidth() >= 0 &&
              std::isfinite(r.jump_relu_bandwidth()))
          : r.jump_relu_bandwidth() != 0) {
    return at("jump_relu_bandwidth",
              "only JUMP_RELU has a bandwidth, finite and >= 0 (0: 0.001)");
  }
  if (sparsity == FfnReplacement::JUMP_RELU
          ? !(r.jump_relu_initial_threshold() >= 0 &&
              std::isfinite(r.jump_relu_initial_threshold()))
          : r.jump_relu_initial_threshold() != 0) {
    return at("jump_relu_initial_threshold",
              "only JUMP_RELU has an initial threshold, finite and >= 0 (0: "
              "0.001)");
  }
  return absl::OkStatus();
}

absl::Status CheckReplacement(const ModelConfig& model,
                              const FieldErrorFn& error) {
  const FfnReplacement& r = model.replacement();
  auto at = [&](absl::string_view leaf, absl::string_view text) {
    return error({"model", "replacement", leaf}, text);
  };
  for (auto [name, value] : {std::pair{"d_ffn", r.d_ffn()},
                             {"n_experts", r.n_experts()},
                             {"top_k", r.top_k()},
                             {"expansion", r.expansion()},
                             {"qk_heads", r.qk_heads()},
                             {"qk_dim", r.qk_dim()}}) {
    if (!InRange(value, 0, kMaxWidth)) {
      return at(name, absl::StrFormat("must be in [0, %d]", kMaxWidth));
    }
  }
  if (!IsNamed(r.site())) return at("site", OneOfEnum<FfnReplacement::Site>());
  if (!IsNamed(r.qk_init())) {
    return at("qk_init", OneOfEnum<FfnReplacement::QkInit>());
  }
  const bool attention_site = r.site() == FfnReplacement::ATTN;
  const bool lorsa = FindAttentionShape(r.ffn()) == AttentionShape::kLorsa;
  if (lorsa != (attention_site && !r.on_output())) {
    return at("ffn",
              "at site ATTN use 'lorsa' or an on_output SAE; 'lorsa' "
              "only there");
  }
  if (attention_site &&
      FindAttentionShape(AttentionName(model)) != AttentionShape::kMultiHead) {
    return at("site", "site ATTN needs model.attention 'mha'");
  }
  if (r.layer() < 0 || r.layer() >= model.n_layers()) {
    return at("layer", absl::StrFormat("block %d is not in [0, n_layers %d)",
                                       r.layer(), model.n_layers()));
  }
  RETURN_IF_ERROR(CheckSparsity(r, at));
  const ReplacementSizes sizes = EffectiveReplacementSizes(model);
  if (!lorsa && (r.qk_dim() != 0 || r.qk_init() != FfnReplacement::QK_RANDOM)) {
    return at(r.qk_dim() != 0 ? "qk_dim" : "qk_init", "only 'lorsa' has one");
  }
  if (lorsa && r.qk_init() != FfnReplacement::QK_RANDOM && model.qk_norm()) {
    return at("qk_init",
              "a Lorsa has no QK norm, so it cannot copy a qk_norm "
              "attention's QK");
  }
  if (lorsa && model.architecture_options().rotary_dims() > sizes.qk_dim) {
    return at("qk_dim",
              absl::StrFormat("the base turns %d rotary dims of each "
                              "head; qk_dim %d is smaller",
                              model.architecture_options().rotary_dims(),
                              sizes.qk_dim));
  }
  if (lorsa && r.qk_init() != FfnReplacement::QK_RANDOM &&
      (sizes.qk_dim != model.d_model() / model.n_heads() ||
       sizes.qk_heads % model.n_heads() != 0)) {
    return at("qk_init",
              absl::StrFormat("copying the attention's QK needs qk_dim = its "
                              "head width %d and qk_heads a multiple of its %d "
                              "heads, got %d and %d",
                              model.d_model() / model.n_heads(),
                              model.n_heads(), sizes.qk_dim, sizes.qk_heads));
  }
  if (lorsa) {
    if (sizes.d_ffn <= 0) {
      return at("d_ffn", "lorsa needs d_ffn (OV heads) or an expansion");
    }
    if (sizes.d_ffn % sizes.qk_heads != 0) {
      return at("d_ffn",
                absl::StrFormat("lorsa's %d OV heads are not a multiple of "
                                "qk_heads %d",
                                sizes.d_ffn, sizes.qk_heads));
    }
    if (r.top_k() < 1 || r.top_k() > sizes.d_ffn) {
      return at("top_k",
                absl::StrFormat("lorsa needs top_k in [1, OV heads %d], got %d",
                                sizes.d_ffn, r.top_k()));
    }
    return absl::OkStatus();
  }
  const std::optional<FfnShape> shape = FindFfnShape(r.ffn());
  if (shape.has_value() && shape != FfnShape::kTopK &&
      shape != FfnShape::kMxd) {
    std::vector<std::string> names = FfnNames(FfnShape::kTopK);
    for (const std::string& name : FfnNames(FfnShape::kMxd)) {
      names.push_back(name);
    }
    for (const std::string& name : AttentionNames(AttentionShape::kLorsa)) {
      names.push_back(name);
    }
    return at("ffn",
              absl::StrCat("'", r.ffn(), "' is not a replacement layer (",
                           absl::StrJoin(names, ", "), ")"));
  }
  if (shape.has_value() && sizes.d_ffn <= 0) {
    return at("d_ffn", "set d_ffn or an expansion");
  }
  const double rank_fraction = r.cp_rank_fraction();
  if (r.ffn() == kCpMoe && !(rank_fraction > 0 && rank_fraction <= 1)) {
    return at("cp_rank_fraction",
              absl::StrCat("cp_moe needs cp_rank_fraction in (0, 1], got ",
                           rank_fraction));
  }
  if (r.ffn() != kCpMoe && rank_fraction != 0) {
    return at("cp_rank_fraction", "only cp_moe has a decoder rank");
  }
  const FfnReplacement::Sparsity sparsity = EffectiveSparsity(r);
  // The CP-MoE's factors absorb any scale of its codes, so an L1 on them
  // penalises nothing (it has no decoder rows to weight the codes by).
  if (r.ffn() == kCpMoe && sparsity == FfnReplacement::RELU_L1) {
    return at("sparsity",
              "cp_moe has no decoder rows to weight an L1 by (its factors "
              "absorb the codes' scale); use TOPK, BATCH_TOPK or JUMP_RELU");
  }
  const bool needs_top_k = sparsity == FfnReplacement::TOPK ||
                           sparsity == FfnReplacement::BATCH_TOPK;
  // An MxD's units are its N experts: K beyond them keeps every code.
  if (needs_top_k && shape == FfnShape::kMxd && sizes.n_experts > 0 &&
      r.top_k() > sizes.n_experts) {
    return at("top_k",
              absl::StrFormat("%s needs top_k in [1, n_experts %d], got %d",
                              r.ffn(), sizes.n_experts, r.top_k()));
  }
  return CheckFfn(model, r.ffn(), sizes.d_ffn, sizes.n_experts, r.top_k(),
                  /*replacement=*/true, error, needs_top_k);
}

absl::Status CheckLayerOptions(const ModelConfig& model,
                               const FieldErrorFn& error) {
  const LayerOptions& layer = model.layer_options();
  auto at = [&](absl::string_view leaf, absl::string_view text) {
    return error({"model", "layer_options", leaf}, text);
  };
  if (!IsNamed(layer.router_sigma())) {
    return at("router_sigma", OneOfEnum<LayerOptions::RouterSigma>());
  }
  if (!IsNamed(layer.mohd_scaling())) {
    return at("mohd_scaling", OneOfEnum<LayerOptions::MohdScaling>());
  }
  if (layer.has_load_balance_weight() &&
      !InRange(layer.load_balance_weight(), 0, 1e3)) {
    return at("load_balance_weight", "must be a finite number in [0, 1000]");
  }
  if (layer.has_mohd_balance_weight() &&
      !InRange(layer.mohd_balance_weight(), 0, 1e3)) {
    return at("mohd_balance_weight", "must be a finite number in [0, 1000]");
  }
  if (layer.has_mohd_shared() && layer.mohd_shared() < 0) {
    return at("mohd_shared", "must be >= 0");
  }
  for (auto [name, value] :
       {std::pair{"lorsa_ov_heads", layer.lorsa_ov_heads()},
        {"lorsa_top_k", layer.lorsa_top_k()}}) {
    if (!InRange(value, 0, kMaxWidth)) {
      return at(name, absl::StrFormat("must be in [0, %d]", kMaxWidth));
    }
  }
  return absl::OkStatus();
}

// The pretrained-architecture switches (ArchitectureOptions): each only where
// the layers implement it.
absl::Status CheckArchitectureOptions(const ModelConfig& model,
                                      const FieldErrorFn& error) {
  const ArchitectureOptions& arch = model.architecture_options();
  auto at = [&](absl::string_view leaf, absl::string_view text) {
    return error({"model", "architecture_options", leaf}, text);
  };
  const bool mha =
      FindAttentionShape(AttentionName(model)) == AttentionShape::kMultiHead;
  const bool rotary = model.positions() == ModelConfig::ROTARY;
  const int64_t head_dim = model.d_model() / model.n_heads();
  if ((arch.bias() || arch.parallel_residual() || arch.n_kv_heads() != 0) &&
      !mha) {
    return at(arch.bias()                ? "bias"
              : arch.parallel_residual() ? "parallel_residual"
                                         : "n_kv_heads",
              "needs attention 'mha'");
  }
  if (arch.layer_norm_without_bias() &&
      model.norm() != ModelConfig::LAYER_NORM) {
    return at("layer_norm_without_bias", "needs norm: LAYER_NORM");
  }
  if (arch.gelu_tanh() && FfnName(model) != "gelu_mlp") {
    return at("gelu_tanh", "needs ffn 'gelu_mlp'");
  }
  if (!InRange(arch.norm_eps(), 0, 0.5)) {
    return at("norm_eps", "must be a finite number in [0, 0.5] (0 = default)");
  }
  if (arch.n_kv_heads() < 0 ||
      (arch.n_kv_heads() > 0 && model.n_heads() % arch.n_kv_heads() != 0)) {
    return at("n_kv_heads",
              absl::StrFormat("%d must be 0 or divide n_heads %d",
                              arch.n_kv_heads(), model.n_heads()));
  }
  if (arch.rotary_dims() < 0 || arch.rotary_dims() > head_dim ||
      arch.rotary_dims() % 2 != 0) {
    return at("rotary_dims",
              absl::StrFormat("%d must be even and in [0, head dim %d]",
                              arch.rotary_dims(), head_dim));
  }
  const bool scaled = arch.rotary_scaling_factor() != 0;
  if (!InRange(arch.rotary_base(), 0, 1e12) ||
      !InRange(arch.rotary_scaling_factor(), 0, 1e6)) {
    return at(scaled ? "rotary_scaling_factor" : "rotary_base",
              "must be a finite number >= 0 (0 = default)");
  }
  if (scaled &&
      !(arch.rotary_low_freq_factor() > 0 &&
        arch.rotary_high_freq_factor() > arch.rotary_low_freq_factor() &&
        arch.rotary_original_context() > 0)) {
    return at("rotary_scaling_factor",
              "needs rotary_high_freq_factor > rotary_low_freq_factor > 0 and "
              "rotary_original_context > 0");
  }
  if ((arch.rotary_dims() != 0 || arch.rotary_base() != 0 || scaled) &&
      !rotary) {
    return at(arch.rotary_dims() != 0   ? "rotary_dims"
              : arch.rotary_base() != 0 ? "rotary_base"
                                        : "rotary_scaling_factor",
              "needs positions: ROTARY");
  }
  return absl::OkStatus();
}

absl::Status CheckModel(const ModelConfig& model, const FieldErrorFn& error) {
  auto at = [&](absl::string_view leaf, absl::string_view text) {
    return error({"model", leaf}, text);
  };
  if (!model.architecture().empty() && model.architecture() != "gpt") {
    return at("architecture", OneOf({"gpt"}));
  }
  for (auto [name, value, high] :
       {std::tuple{"vocab_size", model.vocab_size(), kMaxVocabulary},
        {"context_length", model.context_length(), kMaxWidth},
        {"d_model", model.d_model(), kMaxWidth},
        {"n_layers", model.n_layers(), kMaxLayers},
        {"n_heads", model.n_heads(), kMaxWidth}}) {
    if (value <= 0) return at(name, "must be > 0");
    if (value > high) return at(name, absl::StrFormat("must be <= %d", high));
  }
  if (model.d_model() % model.n_heads() != 0) {
    return at("n_heads",
              absl::StrFormat("d_model %d is not divisible by n_heads %d",
                              model.d_model(), model.n_heads()));
  }
  for (auto [name, value] : {std::pair{"d_ffn", model.d_ffn()},
                             {"n_experts", model.n_experts()},
                             {"top_k", model.top_k()},
                             {"d_key", model.d_key()},
                             {"attention_inner", model.attention_inner()},
                             {"embedding_width", model.embedding_width()}}) {
    if (value < 0) return at(name, "must be >= 0");
    if (value > kMaxWidth) {
      return at(name, absl::StrFormat("must be <= %d", kMaxWidth));
    }
  }
  if (!InRange(model.ffn_alpha(), 0, 1024)) {
    return at("ffn_alpha", "must be a finite number in [0, 1024]");
  }
  // Product-key layers (sgatlin, PEER) read n_experts as the channel count
  // C and top_k as the neurons per channel (arXiv:2606.07414 App. A.1).
  const bool product_key =
      FindFfnShape(FfnName(model)) == FfnShape::kProductKey;
  if (!product_key && model.n_experts() > 0 &&
      model.top_k() > model.n_experts()) {
    return at("top_k", absl::StrFormat("top_k %d exceeds n_experts %d",
                                       model.top_k(), model.n_experts()));
  }
  if (!IsNamed(model.positions())) {
    return at("positions", OneOfEnum<ModelConfig::Positions>());
  }
  if (!IsNamed(model.norm())) return at("norm", OneOfEnum<ModelConfig::Norm>());
  const std::optional<AttentionShape> attention =
      FindAttentionShape(AttentionName(model));
  if (!attention.has_value()) {
    return at("attention", absl::StrCat("unknown attention '",
                                        AttentionName(model), "'; known: ",
                                        absl::StrJoin(AttentionNames(), ", ")));
  }
  const int64_t head_dim = model.d_model() / model.n_heads();
  if (model.positions() == ModelConfig::ROTARY &&
      attention != AttentionShape::kMohd && head_dim % 2 != 0) {
    return at("positions",
              absl::StrFormat("rotary needs an even head dim; d_model %d / "
                              "n_heads %d = %d",
                              model.d_model(), model.n_heads(), head_dim));
  }
  RETURN_IF_ERROR(CheckLayerOptions(model, error));
  if (attention == AttentionShape::kMohd) {
    RETURN_IF_ERROR(CheckMohd(model, "attention 'mohd'", error));
    // MoHD attention always applies rotary positions to its heads (mohd.cc).
    const int64_t inner =
        model.attention_inner() > 0 ? model.attention_inner() : model.d_model();
    if (inner % model.n_heads() != 0 || (inner / model.n_heads()) % 2 != 0) {
      return at("attention_inner",
                absl::StrFormat("MoHD attention needs an inner width %d that "
                                "splits into n_heads %d even (rotary) heads",
                                inner, model.n_heads()));
    }
  }
  if (attention == AttentionShape::kLorsa) {
    const LayerOptions& layer = model.layer_options();
    const int64_t ov_heads =
        layer.lorsa_ov_heads() > 0 ? layer.lorsa_ov_heads() : model.d_model();
    const int64_t k =
        layer.lorsa_top_k() > 0 ? layer.lorsa_top_k() : model.n_heads();
    if (ov_heads % model.n_heads() != 0) {
      return error({"model", "layer_options", "lorsa_ov_heads"},
                   absl::StrFormat("%d OV heads are not a multiple of n_heads "
                                   "%d",
                                   ov_heads, model.n_heads()));
    }
    if (k > ov_heads) {
      return error({"model", "layer_options", "lorsa_top_k"},
                   absl::StrFormat("%d exceeds the %d OV heads", k, ov_heads));
    }
  }
  if (model.qk_norm() && attention != AttentionShape::kMultiHead) {
    return at("qk_norm", "needs attention 'mha'");
  }
  if (model.embedding_width() != 0) {
    if (model.embedding_width() <= model.d_model()) {
      return at("embedding_width",
                absl::StrFormat("%d must be 0 or above d_model %d",
                                model.embedding_width(), model.d_model()));
    }
    if (model.tie_embeddings()) {
      return at("embedding_width", "needs tie_embeddings: false");
    }
  }
  RETURN_IF_ERROR(CheckArchitectureOptions(model, error));
  RETURN_IF_ERROR(CheckFfn(model, FfnName(model), EffectiveFfnWidth(model),
                           model.n_experts(), model.top_k(),
                           /*replacement=*/false, error));
  if (!model.replacement().ffn().empty()) return CheckReplacement(model, error);
  return absl::OkStatus();
}

}  // namespace

std::string FfnName(const ModelConfig& model) {
  return model.ffn().empty() ? "gelu_mlp" : model.ffn();
}

std::string AttentionName(const ModelConfig& model) {
  return model.attention().empty() ? "mha" : model.attention();
}

int64_t EffectiveFfnWidth(const ModelConfig& model) {
  const double alpha = model.ffn_alpha() > 0 ? model.ffn_alpha() : 4.0;
  return model.d_ffn() > 0 ? model.d_ffn()
                           : static_cast<int64_t>(alpha * model.d_model());
}

FfnReplacement::Sparsity EffectiveSparsity(const FfnReplacement& replacement) {
  if (replacement.ffn() == "relu_sae") return FfnReplacement::RELU_L1;
  if (replacement.ffn() == "jump_relu_sae") return FfnReplacement::JUMP_RELU;
  if (replacement.ffn() == "batch_topk_sae") return FfnReplacement::BATCH_TOPK;
  return replacement.sparsity();
}

ReplacementSizes EffectiveReplacementSizes(const ModelConfig& model) {
  const FfnReplacement& r = model.replacement();
  const bool mxd = FindFfnShape(r.ffn()) == FfnShape::kMxd;
  const int64_t width = int64_t{r.expansion()} * model.d_model();
  ReplacementSizes sizes;
  sizes.d_ffn = r.d_ffn() > 0 ? r.d_ffn()
                : mxd         ? EffectiveFfnWidth(model)
                              : width;
  sizes.n_experts = r.n_experts();
  if (r.ffn() == kCpMoe) {
    sizes.rank = CpMoeRank(sizes.d_ffn, model.d_model(), r.cp_rank_fraction());
    if (sizes.n_experts == 0 && width > 0) {
      sizes.n_experts = CpMoeExpertsMatchingTranscoder(
          model.d_model(), model.d_model(), sizes.d_ffn, sizes.rank, width);
    }
  } else if (mxd && sizes.n_experts == 0 && width > 0) {
    sizes.n_experts = MxdExpertsMatchingTranscoder(
        model.d_model(), model.d_model(), sizes.d_ffn, width,
        r.ffn() == "mxd_swiglu", MatchingFormula::kExact);
  }
  sizes.qk_heads = r.qk_heads() > 0 ? r.qk_heads() : model.n_heads();
  sizes.qk_dim = r.qk_dim() > 0 || model.n_heads() <= 0
                     ? r.qk_dim()
                     : model.d_model() / model.n_heads();
  return sizes;
}

absl::Status ValidateModelConfig(const ModelConfig& model) {
  return CheckModel(model, [](std::initializer_list<absl::string_view> path,
                              absl::string_view message) {
    return absl::InvalidArgumentError(
        absl::StrFormat("field '%s': %s", absl::StrJoin(path, "."), message));
  });
}

absl::Status ValidateExperimentConfig(const ExperimentConfig& config,
                                      const FieldErrorFn& error) {
  const RuntimeConfig& runtime = config.runtime();
  if (!InRange(runtime.threads(), 0, kMaxThreads)) {
    return error(
        {"runtime", "threads"},
        absl::StrFormat("must be in [0, %d] (0 = --threads)", kMaxThreads));
  }
  if (runtime.checkpoint_every_steps() < 0) {
    return error({"runtime", "checkpoint_every_steps"}, "must be >= 0");
  }
  if (!IsNamed(runtime.device())) {
    return error({"runtime", "device"}, OneOfEnum<RuntimeConfig::Device>());
  }
  if (config.has_model()) {
    RETURN_IF_ERROR(CheckModel(config.model(), error));
  }
  if (config.has_data()) {
    const DataConfig& data = config.data();
    if (!InRange(data.batch_size(), 1, kMaxWidth)) {
      return error({"data", "batch_size"},
                   absl::StrFormat("must be in [1, %d]", kMaxWidth));
    }
    if (data.sequence_length() <= 0) {
      return error({"data", "sequence_length"}, "must be > 0");
    }
    if (config.has_model() &&
        data.sequence_length() > config.model().context_length()) {
      return error({"data", "sequence_length"},
                   absl::StrFormat("%d exceeds model.context_length %d",
                                   data.sequence_length(),
                                   config.model().context_length()));
    }
  }
  if (config.has_optimizer()) {
    const OptimizerConfig& optimizer = config.optimizer();
    if (!(optimizer.learning_rate() > 0 && optimizer.learning_rate() <= 1)) {
      return error({"optimizer", "learning_rate"},
                   "must be a finite number in (0, 1]");
    }
    if (!InRange(optimizer.weight_decay(), 0, 10)) {
      return error({"optimizer", "weight_decay"},
                   "must be a finite number in [0, 10]");
    }
    for (auto [name, value] : {std::pair{"beta1", optimizer.beta1()},
                               {"beta2", optimizer.beta2()}}) {
      if (!(value >= 0 && value < 1)) {
        return error({"optimizer", name}, "must be in [0, 1)");
      }
    }
    if (!InRange(optimizer.epsilon(), 0, 1)) {
      return error({"optimizer", "epsilon"},
                   "must be a finite number in [0, 1] (0 = 1e-8)");
    }
    if (!InRange(optimizer.gradient_clip_norm(), 0, 1e6)) {
      return error({"optimizer", "gradient_clip_norm"},
                   "must be a finite number >= 0 (0 = no clipping)");
    }
  }
  if (config.has_schedule()) {
    const ScheduleConfig& schedule = config.schedule();
    if (schedule.decay() == ScheduleConfig::DECAY_UNSPECIFIED) {
      return error({"schedule", "decay"},
                   "must be set (CONSTANT, COSINE or INVERSE_SQRT)");
    }
    if (schedule.warmup_steps() < 0) {
      return error({"schedule", "warmup_steps"}, "must be >= 0");
    }
    if (!InRange(schedule.min_lr_ratio(), 0, 1)) {
      return error({"schedule", "min_lr_ratio"}, "must be in [0, 1]");
    }
    if (!InRange(schedule.decay_fraction(), 0, 1)) {
      return error({"schedule", "decay_fraction"},
                   "must be in [0, 1] (0 = 0.2)");
    }
  }
  if (config.has_budget()) {
    const BudgetConfig& budget = config.budget();
    if (budget.max_steps() < 0 || budget.max_tokens() < 0 ||
        !(std::isfinite(budget.max_flops()) && budget.max_flops() >= 0)) {
      return error({"budget"}, "limits must be finite and >= 0");
    }
    if (budget.max_steps() == 0 && budget.max_tokens() == 0 &&
        budget.max_flops() == 0) {
      return error({"budget"},
                   "set at least one of max_steps, max_tokens, max_flops");
    }
  }
  if (config.has_eval()) {
    const EvalConfig& eval = config.eval();
    if (eval.every_steps() < 0 || eval.batches() < 0 ||
        eval.sample_tokens() < 0) {
      return error({"eval"}, "counts must be >= 0");
    }
    if (!InRange(eval.temperature(), 0, 1e3)) {
      return error({"eval", "temperature"},
                   "must be a finite number in [0, 1000]");
    }
    if (!InRange(eval.top_p(), 0, 1)) {
      return error({"eval", "top_p"}, "must be in [0, 1]");
    }
  }
  if (config.has_init() && !InRange(config.init().upcycle_noise(), 0, 1e3)) {
    return error({"init", "upcycle_noise"},
                 "must be a finite number in [0, 1000]");
  }
  return absl::OkStatus();
}

}  // namespace sparse_layers::config
