#include "layers/replacement/sparse_replacement.h"

#include <algorithm>
#include <cmath>

#include "ops/core/largest_k.h"

namespace sparse_layers::layers {
namespace {

// nn.Linear's default init, U(-1/sqrt(fan_in), 1/sqrt(fan_in)), as in the MxD
// authors' released code (sparse_autoencoder.py).
torch::Tensor Uniform(std::vector<int64_t> shape, int64_t fan_in) {
  const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
  return torch::empty(shape).uniform_(-bound, bound);
}

torch::Tensor UnitRows(torch::Tensor rows) {
  return rows / rows.norm(2, -1, /*keepdim=*/true).clamp_min(1e-12);
}

// Registry options -> replacement options; `decoder_default` is the layer's
// norm_dec default when the config leaves it unset.
ReplacementOptions FromFeedForward(const FeedForwardOptions& o,
                                   int64_t n_experts, bool decoder_default) {
  ReplacementOptions options{o.d_model, o.d_model, o.d_ffn, n_experts, o.top_k};
  options.normalise_decoder =
      o.variants.normalise_decoder.value_or(decoder_default);
  options.random_k = o.variants.random_k;
  options.sparsity = o.sparsity;
  options.sparsity_penalty = o.sparsity_penalty;
  options.jump_relu_bandwidth = o.jump_relu_bandwidth;
  options.jump_relu_initial_threshold = o.jump_relu_initial_threshold;
  return options;
}

// Gradients of Eqs. 11-12 (arXiv:2407.14435): rectangle-kernel pseudo-
// derivatives for theta; z passes H(z - theta) (JumpRelu) or nothing (Step).
class JumpFunction : public torch::autograd::Function<JumpFunction> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx,
                               const torch::Tensor& z,
                               const torch::Tensor& theta, double bandwidth,
                               bool step) {
    ctx->save_for_backward({z, theta});
    ctx->saved_data["bandwidth"] = bandwidth;
    ctx->saved_data["step"] = step;
    const torch::Tensor above = (z > theta).to(z.scalar_type());
    return step ? above : z * above;
  }
  static torch::autograd::variable_list backward(
      torch::autograd::AutogradContext* ctx,
      torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor &z = saved[0], &theta = saved[1];
    const double bandwidth = ctx->saved_data["bandwidth"].toDouble();
    const bool step = ctx->saved_data["step"].toBool();
    const torch::Tensor& g = grads[0];
    const torch::Tensor u = (z - theta) / bandwidth;
    const torch::Tensor kernel = ((u > -0.5) & (u < 0.5)).to(z.scalar_type());
    // Eq. 11: -(theta / eps) K; Eq. 12: -(1 / eps) K.
    const torch::Tensor scale =
        step ? torch::full_like(theta, 1.0 / bandwidth) : theta / bandwidth;
    // theta is per unit (U), summed over the batch, or gathered per code
    // (B, k) like z, one gradient per entry.
    torch::Tensor grad_theta = -(kernel * g) * scale;
    if (theta.dim() < z.dim()) grad_theta = grad_theta.sum(0);
    const torch::Tensor grad_z =
        step ? torch::zeros_like(z) : g * (z > theta).to(z.scalar_type());
    return {grad_z, grad_theta, torch::Tensor(), torch::Tensor()};
  }
};

FeedForwardRegistration kTranscoder("transcoder", config::FfnShape::kTopK,
                                    [](const FeedForwardOptions& o) {
                                      return std::make_shared<TranscoderImpl>(
                                          FromFeedForward(o, 0, true),
                                          /*skip=*/false);
                                    });
// D starts at zero, so unit-norm rows are off unless asked for.
FeedForwardRegistration kSkipTranscoder(
    "skip_transcoder", config::FfnShape::kTopK,
    [](const FeedForwardOptions& o) {
      return std::make_shared<TranscoderImpl>(FromFeedForward(o, 0, false),
                                              /*skip=*/true);
    });
// The SAE family: one layer whose name fixes the sparsity rule (as the
// config's EffectiveSparsity reads it).
FeedForwardFactory SaeWith(config::FfnReplacement::Sparsity sparsity) {
  return [sparsity](const FeedForwardOptions& o) {
    ReplacementOptions options = FromFeedForward(o, 0, true);
    options.sparsity = sparsity;
    return std::make_shared<SaeImpl>(options);
  };
}
FeedForwardRegistration kTopKSae("topk_sae", config::FfnShape::kTopK,
                                 SaeWith(config::FfnReplacement::TOPK));
FeedForwardRegistration kBatchTopKSae(
    "batch_topk_sae", config::FfnShape::kTopK,
    SaeWith(config::FfnReplacement::BATCH_TOPK));
FeedForwardRegistration kReluSae("relu_sae", config::FfnShape::kTopK,
                                 SaeWith(config::FfnReplacement::RELU_L1));
FeedForwardRegistration kJumpReluSae(
    "jump_relu_sae", config::FfnShape::kTopK,
    SaeWith(config::FfnReplacement::JUMP_RELU));
FeedForwardRegistration kMxdGelu("mxd_gelu", config::FfnShape::kMxd,
                                 [](const FeedForwardOptions& o) {
                                   return std::make_shared<MxdImpl>(
                                       FromFeedForward(o, o.n_experts, true),
                                       MxdImpl::Encoder::kGelu);
                                 });
// MxD's GELU encoder and gate with a rank-R decoder (arXiv:2505.21364 App.
// B.4.1); as a replacement its N and R come from the config's budget rule,
// and rank 0 (a model's own FFN) is full rank, min(H, d).
FeedForwardRegistration kCpMoe("cp_moe", config::FfnShape::kMxd,
                               [](const FeedForwardOptions& o) {
                                 return std::make_shared<CpMoeImpl>(
                                     FromFeedForward(o, o.n_experts, true),
                                     o.rank > 0 ? o.rank
                                                : std::min(o.d_ffn, o.d_model));
                               });
// The encoder ablation's ReLU-MLP encoder (arXiv:2505.21364 App. B.6.2).
FeedForwardRegistration kMxdRelu("mxd_relu", config::FfnShape::kMxd,
                                 [](const FeedForwardOptions& o) {
                                   return std::make_shared<MxdImpl>(
                                       FromFeedForward(o, o.n_experts, true),
                                       MxdImpl::Encoder::kRelu);
                                 });
FeedForwardRegistration kMxdSwiGlu("mxd_swiglu", config::FfnShape::kMxd,
                                   [](const FeedForwardOptions& o) {
                                     return std::make_shared<MxdImpl>(
                                         FromFeedForward(o, o.n_experts, true),
                                         MxdImpl::Encoder::kSwiGlu);
                                   });

}  // namespace

torch::Tensor JumpRelu(const torch::Tensor& z, const torch::Tensor& theta,
                       double bandwidth) {
  return JumpFunction::apply(z, theta, bandwidth, /*step=*/false);
}

torch::Tensor JumpStep(const torch::Tensor& z, const torch::Tensor& theta,
                       double bandwidth) {
  return JumpFunction::apply(z, theta, bandwidth, /*step=*/true);
}

SparseReplacementImpl::SparseReplacementImpl(const ReplacementOptions& options)
    : options_(options) {
  TORCH_CHECK(options.d_in > 0 && options.d_out > 0 && options.d_ffn > 0,
              "replacement layer needs positive sizes");
  TORCH_CHECK(options.sparsity_penalty >= 0 &&
                  options.jump_relu_bandwidth > 0 &&
                  options.jump_relu_initial_threshold > 0,
              "replacement layer needs a penalty >= 0, a bandwidth > 0 and an "
              "initial threshold > 0");
  output_bias =
      register_parameter("output_bias", torch::zeros({options.d_out}));
  // Units: MxD and CP-MoE experts, else the code width (as units()).
  const int64_t units =
      options.n_experts > 0 ? options.n_experts : options.d_ffn;
  if (options.sparsity == config::FfnReplacement::JUMP_RELU) {
    log_threshold = register_parameter(
        "log_threshold",
        torch::full({units}, std::log(options.jump_relu_initial_threshold)));
  } else if (options.sparsity == config::FfnReplacement::BATCH_TOPK) {
    threshold_sum = register_buffer("threshold_sum", torch::zeros({}));
    threshold_weight = register_buffer("threshold_weight", torch::zeros({}));
  }
}

torch::Tensor SparseReplacementImpl::PreCodes(const torch::Tensor& x) {
  return PreCodesOf(EncoderTermsOf(x));
}

torch::Tensor SparseReplacementImpl::PreCodesOf(const EncoderTerms& e) {
  return torch::addmm(e.bias, e.input, e.rows.t());
}

TopKCodes SparseReplacementImpl::Encode(const torch::Tensor& x, int64_t k) {
  if (options_.sparsity != config::FfnReplacement::TOPK) {
    RuleCodes rule = CodesOfRule(x, /*allow_listed=*/true);
    if (rule.listed.values.defined()) return rule.listed;
    torch::Tensor indices;
    {
      torch::NoGradGuard no_grad;
      // Codes are >= 0, so the non-zero ones come first.
      const int64_t width = ListedWidth(SupportCounts(rule.dense.ne(0)));
      indices = std::get<1>(rule.dense.topk(width, -1, true, /*sorted=*/false));
    }
    return {rule.dense.gather(1, indices), indices};
  }
  TORCH_CHECK(k > 0 && k <= units(), "top-k needs 0 < k <= units");
  const EncoderTerms e = EncoderTermsOf(x);
  torch::Tensor indices;
  {
    // The selection carries no gradient; TopK(ReLU(p)) keeps p's top k.
    torch::NoGradGuard no_grad;
    indices = std::get<1>(LargestK(PreCodesOf(e), k, /*sorted=*/false));
  }
  return {torch::relu(SelectedPreCodes(e, indices)), indices};
}

torch::Tensor SparseReplacementImpl::SelectedPreCodes(
    const EncoderTerms& e, const torch::Tensor& indices) {
  return SparseDot(e.input, e.rows, indices) +
         e.bias.index_select(0, indices.reshape({-1})).view(indices.sizes());
}

torch::Tensor SparseReplacementImpl::SupportCounts(
    const torch::Tensor& support) {
  // An int32 sum: a bool's default int64 sum first copies the whole mask.
  return support.sum(1, /*keepdim=*/false, torch::kInt).to(torch::kLong);
}

int64_t SparseReplacementImpl::ListedWidth(const torch::Tensor& counts) {
  return std::max<int64_t>(1, counts.max().item<int64_t>());
}

torch::Tensor SparseReplacementImpl::DenseCodes(const torch::Tensor& x) {
  return CodesOfRule(x, /*allow_listed=*/false).dense;
}

torch::Tensor SparseReplacementImpl::RuleSupport(const torch::Tensor& pre,
                                                 bool differentiable) {
  torch::NoGradGuard no_grad;
  switch (options_.sparsity) {
    case config::FfnReplacement::BATCH_TOPK: {
      if (!is_training()) return pre > std::max(0.0, BatchThreshold());
      const torch::Tensor codes = torch::relu(pre);
      const int64_t rows = codes.size(0), width = codes.size(1);
      const int64_t k = EffectiveK();
      const int64_t kept = std::min<int64_t>(k * rows, codes.numel());
      // The kept-th largest of each row's m largest codes bounds the batch's
      // kept-th largest from below; the batch's top-k among the positive codes
      // above that bound is its top-k over all codes (zeros kept or not
      // change no code), without a top-k over the whole batch.
      const int64_t m = std::min<int64_t>(width, 4 * k);
      const torch::Tensor candidates =
          std::get<0>(codes.topk(m, -1, /*largest=*/true, /*sorted=*/false));
      const double bound =
          std::get<0>(candidates.reshape({-1}).topk(kept)).min().item<double>();
      torch::Tensor positions =
          ((codes >= bound) & (codes > 0)).reshape({-1}).nonzero().squeeze(1);
      torch::Tensor values = codes.reshape({-1}).index_select(0, positions);
      if (positions.numel() > kept) {
        const auto [largest, order] = values.topk(kept);
        values = largest;
        positions = positions.index_select(0, order);
      }
      if (values.numel() > 0) {
        // Running mean of the smallest kept code, weight 0.01 per step.
        threshold_sum.mul_(0.99).add_(values.min());
        threshold_weight.mul_(0.99).add_(1);
      }
      return torch::zeros({codes.numel()}, pre.options().dtype(torch::kBool))
          .index_fill_(0, positions, true)
          .view(codes.sizes());
    }
    case config::FfnReplacement::RELU_L1:
      return pre > 0;
    case config::FfnReplacement::JUMP_RELU: {
      const torch::Tensor theta = log_threshold.exp();
      // Differentiated, theta's gradient also reads the codes within half the
      // kernel's width below it (arXiv:2407.14435 Eqs. 11-12).
      return differentiable ? pre > theta - 0.5 * options_.jump_relu_bandwidth
                            : pre > theta;
    }
    default:
      break;
  }
  TORCH_CHECK(false, "RuleSupport serves the rules other than TOPK");
  return {};
}

SparseReplacementImpl::RuleCodes SparseReplacementImpl::CodesOfRule(
    const torch::Tensor& x, bool allow_listed) {
  penalty_ = torch::Tensor();
  const EncoderTerms e = EncoderTermsOf(x);
  const bool differentiable = torch::GradMode::is_enabled();
  // One encoder product: differentiable for the dense path (a listed path
  // leaves its graph unused), its detached values for the support.
  const torch::Tensor pre = PreCodesOf(e);
  torch::Tensor support, counts;
  int64_t width = 0;
  {
    torch::NoGradGuard no_grad;
    support = RuleSupport(pre.detach(), differentiable);
    counts = SupportCounts(support);
    width = ListedWidth(counts);
  }
  const double lambda = options_.sparsity_penalty;
  const bool penalised = is_training() && lambda > 0;
  if (!allow_listed || width * kListedShare > units()) {
    // Dense codes: a wide support decodes faster by matrix products.
    switch (options_.sparsity) {
      case config::FfnReplacement::BATCH_TOPK:
        return {{}, torch::relu(pre) * support.to(pre.scalar_type())};
      case config::FfnReplacement::RELU_L1: {
        const torch::Tensor codes = torch::relu(pre);
        // Decoder-norm-weighted L1 (a plain L1 for unit rows). For the MxD,
        // as in its released code, the weight is |c_n| alone: D can absorb a
        // rescaling of the gates, so the penalty's strength may drift.
        if (penalised)
          penalty_ = lambda * WeightedCodes(codes, {}).sum(1).mean();
        return {{}, codes};
      }
      case config::FfnReplacement::JUMP_RELU: {
        const torch::Tensor theta = log_threshold.exp();
        const double eps = options_.jump_relu_bandwidth;
        if (penalised) {
          penalty_ = lambda * JumpStep(pre, theta, eps).sum(1).mean();
        }
        return {{}, JumpRelu(pre, theta, eps)};
      }
      default:
        break;
    }
    TORCH_CHECK(false, "CodesOfRule serves the rules other than TOPK");
  }
  // Listed codes: each row's support entries in its first slots, the rest
  // padded with unit 0 at `kept` 0; the encoder and decoder read only these.
  torch::Tensor indices, kept;
  {
    torch::NoGradGuard no_grad;
    const int64_t rows = support.size(0);
    const torch::Tensor entries = support.nonzero();  // (n, 2), by row.
    const torch::Tensor row = entries.select(1, 0);
    const torch::Tensor starts = counts.cumsum(0) - counts;
    const torch::Tensor slots = row * width +
                                torch::arange(entries.size(0), row.options()) -
                                starts.index_select(0, row);
    indices = torch::zeros({rows * width}, row.options())
                  .index_copy_(0, slots, entries.select(1, 1))
                  .view({rows, width});
    kept = torch::zeros({rows * width}, pre.options())
               .index_fill_(0, slots, 1)
               .view({rows, width});
  }
  const torch::Tensor selected = SelectedPreCodes(e, indices);
  torch::Tensor values;
  if (options_.sparsity == config::FfnReplacement::JUMP_RELU) {
    const torch::Tensor theta = log_threshold.exp()
                                    .index_select(0, indices.reshape({-1}))
                                    .view(indices.sizes());
    const double eps = options_.jump_relu_bandwidth;
    values = JumpRelu(selected, theta, eps) * kept;
    if (penalised) {
      penalty_ = lambda * (JumpStep(selected, theta, eps) * kept).sum(1).mean();
    }
  } else {
    values = torch::relu(selected) * kept;
    if (penalised && options_.sparsity == config::FfnReplacement::RELU_L1) {
      penalty_ = lambda * WeightedCodes(values, indices).sum(1).mean();
    }
  }
  return {{values, indices}, {}};
}

torch::Tensor SparseReplacementImpl::WeightedCodes(
    const torch::Tensor& codes, const torch::Tensor& indices) {
  const torch::Tensor rows = DecoderRows();
  if (!rows.defined()) return codes;
  const torch::Tensor norms = rows.norm(2, -1);
  if (!indices.defined()) return codes * norms;
  return codes *
         norms.index_select(0, indices.reshape({-1})).view(indices.sizes());
}

double SparseReplacementImpl::BatchThreshold() const {
  const double weight = threshold_weight.item<double>();
  return weight > 0 ? threshold_sum.item<double>() / weight : 0.0;
}

int64_t SparseReplacementImpl::DecodedUnits() const {
  return options_.sparsity == config::FfnReplacement::TOPK ? options_.top_k
                                                           : units();
}

torch::Tensor SparseReplacementImpl::Forward(const torch::Tensor& input,
                                             const HookPoint& hidden) {
  // Tokens flattened to rows (the layer maps each token's x alone, MxD
  // arXiv:2505.21364 Sec. 2.1), restored after decoding.
  const torch::Tensor x = input.reshape({-1, input.size(-1)});
  torch::Tensor y;
  if (options_.sparsity != config::FfnReplacement::TOPK) {
    const RuleCodes rule = CodesOfRule(x, /*allow_listed=*/!hidden.active());
    if (rule.listed.values.defined()) {
      y = DecodeSparse(x, rule.listed);
    } else {
      y = DecodeDense(x, hidden.active() ? hidden(rule.dense) : rule.dense);
    }
  } else {
    const TopKCodes codes = Encode(x, EffectiveK());
    y = hidden.active() ? DecodeDense(x, hidden(Densify(codes, units())))
                        : DecodeSparse(x, codes);
  }
  auto shape = input.sizes().vec();
  shape.back() = options_.d_out;
  return y.view(shape);
}

void SparseReplacementImpl::InitOutputBias(const torch::Tensor& target_mean) {
  torch::NoGradGuard no_grad;
  output_bias.copy_(target_mean.reshape({-1}));
}

void SparseReplacementImpl::NormaliseDecoder() {
  torch::Tensor rows = DecoderRows();
  if (!options_.normalise_decoder || !rows.defined()) return;
  torch::NoGradGuard no_grad;
  rows.copy_(UnitRows(rows));
}

void SparseReplacementImpl::ProjectDecoderGradients() {
  torch::Tensor rows = DecoderRows();
  if (!options_.normalise_decoder || !rows.defined() ||
      !rows.grad().defined()) {
    return;
  }
  torch::NoGradGuard no_grad;
  // g_h -= (g_h . d_h) d_h for unit rows d_h (norm_dec in the MxD authors'
  // released code, train_sae_on_language_model.py).
  const torch::Tensor unit = UnitRows(rows);
  rows.mutable_grad().sub_((rows.grad() * unit).sum(-1, true) * unit);
}

int64_t SparseReplacementImpl::EffectiveK() {
  const int64_t k = options_.top_k;
  if (!is_training() || !options_.random_k) return k;
  const int64_t draw =
      torch::randint(k - k / 2, k + k / 2 + 1, {1}, torch::kLong)
          .item<int64_t>();
  return std::min<int64_t>(std::max<int64_t>(1, draw), units());
}

TranscoderImpl::TranscoderImpl(const ReplacementOptions& options, bool skip)
    : SparseReplacementImpl(options) {
  encoder = register_parameter(
      "encoder", Uniform({options.d_in, options.d_ffn}, options.d_in));
  encoder_bias =
      register_parameter("encoder_bias", torch::zeros({options.d_ffn}));
  if (skip) {
    // Skip Transcoder (Paulo et al. 2025): S = 0 and D = 0 at init.
    decoder = register_parameter("decoder",
                                 torch::zeros({options.d_ffn, options.d_out}));
    this->skip =
        register_parameter("skip", torch::zeros({options.d_in, options.d_out}));
  } else {
    decoder = register_parameter(
        "decoder",
        UnitRows(Uniform({options.d_ffn, options.d_out}, options.d_ffn)));
  }
}

torch::Tensor TranscoderImpl::DecodeSparse(const torch::Tensor& x,
                                           const TopKCodes& codes) {
  torch::Tensor y = SparseDecode(codes, decoder) + output_bias;
  return skip.defined() ? y + torch::matmul(x, skip) : y;
}

torch::Tensor TranscoderImpl::DecodeDense(const torch::Tensor& x,
                                          const torch::Tensor& codes) {
  torch::Tensor y = torch::matmul(codes, decoder) + output_bias;
  return skip.defined() ? y + torch::matmul(x, skip) : y;
}

int64_t TranscoderImpl::ForwardFlopsPerToken() const {
  const auto& o = options_;
  return 2 * o.d_in * o.d_ffn + 2 * DecodedUnits() * o.d_out +
         (skip.defined() ? 2 * o.d_in * o.d_out : 0);
}

SaeImpl::SaeImpl(const ReplacementOptions& options)
    : SparseReplacementImpl(options) {
  TORCH_CHECK(options.d_in == options.d_out, "an SAE reconstructs its input");
  decoder = register_parameter(
      "decoder",
      UnitRows(Uniform({options.d_ffn, options.d_out}, options.d_ffn)));
  // Encoder initialised to the decoder's transpose (Gao et al. 2024).
  encoder = register_parameter("encoder", decoder.detach().t().contiguous());
  encoder_bias =
      register_parameter("encoder_bias", torch::zeros({options.d_ffn}));
}

torch::Tensor SaeImpl::DecodeSparse(const torch::Tensor&,
                                    const TopKCodes& codes) {
  return SparseDecode(codes, decoder) + output_bias;
}

torch::Tensor SaeImpl::DecodeDense(const torch::Tensor&,
                                   const torch::Tensor& codes) {
  return torch::matmul(codes, decoder) + output_bias;
}

int64_t SaeImpl::ForwardFlopsPerToken() const {
  return 2 * options_.d_in * options_.d_ffn +
         2 * DecodedUnits() * options_.d_out;
}

MxdImpl::MxdImpl(const ReplacementOptions& options, Encoder encoder_kind)
    : SparseReplacementImpl(options), encoder_kind_(encoder_kind) {
  TORCH_CHECK(options.n_experts > 0, "MxD needs n_experts > 0");
  const auto& o = options;
  encoder = register_parameter("encoder", Uniform({o.d_in, o.d_ffn}, o.d_in));
  encoder_bias = register_parameter("encoder_bias", torch::zeros({o.d_ffn}));
  if (encoder_kind == Encoder::kSwiGlu) {
    glu = register_parameter("glu", Uniform({o.d_in, o.d_ffn}, o.d_in));
    glu_bias = register_parameter("glu_bias", Uniform({o.d_ffn}, o.d_in));
  }
  // D = 0 (MxD, arXiv:2505.21364 Sec. 3.1): the layer outputs b_out at init.
  decoder = register_parameter("decoder", torch::zeros({o.d_ffn, o.d_out}));
  // With norm_dec the c_n are drawn U(-1, 1) and normalised; otherwise
  // nn.Linear(N, O)'s init.
  experts = register_parameter(
      "experts",
      o.normalise_decoder
          ? UnitRows(torch::empty({o.n_experts, o.d_out}).uniform_(-1, 1))
          : Uniform({o.n_experts, o.d_out}, o.n_experts));
  gate = register_parameter("gate", Uniform({o.n_experts, o.d_in}, o.d_in));
  gate_bias = register_parameter("gate_bias", torch::zeros({o.n_experts}));
}

torch::Tensor MxdImpl::Hidden(const torch::Tensor& x) const {
  const torch::Tensor pre = torch::addmm(encoder_bias, x, encoder);
  switch (encoder_kind_) {
    case Encoder::kGelu:
      return torch::gelu(pre);
    case Encoder::kRelu:
      return torch::relu(pre);
    case Encoder::kSwiGlu:
      return torch::silu(pre) * torch::addmm(glu_bias, x, glu);
  }
  TORCH_CHECK(false, "unknown MxD encoder");
}

torch::Tensor MxdImpl::DecodeSparse(const torch::Tensor& x,
                                    const TopKCodes& codes) {
  return SparseDecode(codes, experts) * torch::matmul(Hidden(x), decoder) +
         output_bias;
}

torch::Tensor MxdImpl::DecodeDense(const torch::Tensor& x,
                                   const torch::Tensor& codes) {
  return torch::matmul(codes, experts) * torch::matmul(Hidden(x), decoder) +
         output_bias;
}

int64_t MxdImpl::ForwardFlopsPerToken() const {
  const auto& o = options_;
  const int64_t encoder_flops =
      (encoder_kind_ == Encoder::kSwiGlu ? 2 : 1) * 2 * o.d_in * o.d_ffn;
  return encoder_flops + 2 * o.d_ffn * o.d_out + 2 * o.d_in * o.n_experts +
         2 * DecodedUnits() * o.d_out;
}

CpMoeImpl::CpMoeImpl(const ReplacementOptions& options, int64_t rank)
    : SparseReplacementImpl(options), rank_(rank) {
  TORCH_CHECK(options.n_experts > 0 && rank > 0,
              "CP-MoE needs n_experts > 0 and a decoder rank > 0");
  const auto& o = options;
  encoder = register_parameter("encoder", Uniform({o.d_in, o.d_ffn}, o.d_in));
  encoder_bias = register_parameter("encoder_bias", torch::zeros({o.d_ffn}));
  gate = register_parameter("gate", Uniform({o.n_experts, o.d_in}, o.d_in));
  gate_bias = register_parameter("gate_bias", torch::zeros({o.n_experts}));
  // Linear-layer init for U1, U2; U3 = 0 (the paper's "zero matrix").
  u1 = register_parameter("u1", Uniform({o.n_experts, rank}, o.n_experts));
  u2 = register_parameter("u2", Uniform({o.d_ffn, rank}, o.d_ffn));
  u3 = register_parameter("u3", torch::zeros({rank, o.d_out}));
}

torch::Tensor CpMoeImpl::DecodeSparse(const torch::Tensor& x,
                                      const TopKCodes& codes) {
  const torch::Tensor z = torch::gelu(torch::addmm(encoder_bias, x, encoder));
  return torch::matmul(SparseDecode(codes, u1) * torch::matmul(z, u2), u3) +
         output_bias;
}

torch::Tensor CpMoeImpl::DecodeDense(const torch::Tensor& x,
                                     const torch::Tensor& codes) {
  const torch::Tensor z = torch::gelu(torch::addmm(encoder_bias, x, encoder));
  return torch::matmul(torch::matmul(codes, u1) * torch::matmul(z, u2), u3) +
         output_bias;
}

int64_t CpMoeImpl::ForwardFlopsPerToken() const {
  const auto& o = options_;
  return 2 * o.d_in * o.d_ffn + 2 * o.d_in * o.n_experts +
         2 * DecodedUnits() * rank_ + 2 * o.d_ffn * rank_ + 2 * rank_ * o.d_out;
}

}  // namespace sparse_layers::layers
