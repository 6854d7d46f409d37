#include "analysis/attention/head_analysis.h"

#include <cmath>

namespace sparse_layers::analysis {

torch::Tensor InductionScores(const torch::Tensor& pattern, int64_t start,
                              int64_t period) {
  const int64_t length = pattern.size(-1);
  TORCH_CHECK(start + period < length, "no second copy in the sequence");
  // Query i (second copy) -> key i - n + 1.
  const torch::Tensor queries = torch::arange(start + period, length);
  const torch::Tensor keys = queries - period + 1;
  return pattern
      .index(
          {torch::indexing::Slice(), torch::indexing::Slice(), queries, keys})
      .mean(std::vector<int64_t>{0, 2});
}

torch::Tensor PreviousTokenScores(const torch::Tensor& pattern) {
  return pattern.diagonal(-1, -2, -1).mean(std::vector<int64_t>{0, 2});
}

ZPatternScores LorsaZPatternScores(const torch::Tensor& pattern,
                                   const torch::Tensor& values,
                                   const torch::Tensor& activations,
                                   int64_t start, int64_t period) {
  using torch::indexing::Slice;
  const int64_t groups = pattern.size(1), length = pattern.size(-1);
  const int64_t heads = values.size(-1), group_size = heads / groups;
  TORCH_CHECK(start + period < length, "no second copy in the sequence");
  const torch::Tensor queries = torch::arange(start + period, length);
  const torch::Tensor keys = queries - period + 1;
  std::vector<torch::Tensor> induction, previous, induction_n, previous_n;
  for (int64_t g = 0; g < groups; ++g) {
    const Slice own(g * group_size, (g + 1) * group_size);
    // |A_ij v_j| for the group's heads: (B, G, T, T), normalised over j.
    const torch::Tensor v = values.index({Slice(), Slice(), own});
    torch::Tensor share =
        (pattern.select(1, g).unsqueeze(1) * v.transpose(1, 2).unsqueeze(2))
            .abs();
    share = share / share.sum(-1, /*keepdim=*/true).clamp_min(1e-30);
    const torch::Tensor active = activations.index({Slice(), Slice(), own})
                                     .ne(0)
                                     .transpose(1, 2)
                                     .to(share.dtype());  // (B, G, T)
    const torch::Tensor on_key =
        share.index({Slice(), Slice(), queries, keys});  // (B, G, n)
    const torch::Tensor active_second =
        active.index({Slice(), Slice(), queries});
    induction_n.push_back(active_second.sum(std::vector<int64_t>{0, 2}));
    induction.push_back(
        (on_key * active_second).sum(std::vector<int64_t>{0, 2}) /
        induction_n.back().clamp_min(1));
    const torch::Tensor on_previous =
        share.diagonal(-1, -2, -1);  // (B, G, T-1)
    const torch::Tensor active_after_first = active.slice(2, 1);
    previous_n.push_back(active_after_first.sum(std::vector<int64_t>{0, 2}));
    previous.push_back(
        (on_previous * active_after_first).sum(std::vector<int64_t>{0, 2}) /
        previous_n.back().clamp_min(1));
  }
  return {torch::cat(induction), torch::cat(previous),
          torch::cat(induction_n).to(torch::kLong),
          torch::cat(previous_n).to(torch::kLong)};
}

HeadOutputs MhsaHeadOutputs(layers::CausalSelfAttentionImpl& attention,
                            const torch::Tensor& x) {
  std::vector<torch::Tensor> patterns;
  attention.hook_pattern.Add([&](const torch::Tensor& p) {
    patterns.push_back(p);
    return p;
  });
  attention.forward(x);
  attention.hook_pattern.Clear();
  const int64_t d = attention.options().d_model;
  const int64_t heads = attention.options().n_heads;
  const int64_t head_dim = d / heads;
  // Rows of qkv->weight are (3, H, Dh) outputs: the value block is the third.
  const torch::Tensor w_v = attention.qkv->weight.slice(0, 2 * d, 3 * d);
  const torch::Tensor v = torch::matmul(x, w_v.t())
                              .view({x.size(0), x.size(1), heads, head_dim})
                              .transpose(1, 2);               // (B, H, T, Dh)
  const torch::Tensor mixed = torch::matmul(patterns[0], v);  // (B, H, T, Dh)
  // out->weight (d, d): head h owns the input columns h Dh .. (h + 1) Dh.
  const torch::Tensor w_o =
      attention.out->weight.view({d, heads, head_dim}).permute({1, 2, 0});
  const torch::Tensor outputs =
      torch::einsum("bhtk,hkd->bthd", {mixed, w_o});  // (B, T, H, d)
  return {outputs, patterns[0]};
}

HeadAttribution::HeadAttribution(int64_t lorsa_heads, int64_t mhsa_heads)
    : sums_(torch::zeros({lorsa_heads, mhsa_heads}, torch::kDouble)),
      counts_(torch::zeros({lorsa_heads}, torch::kLong)) {}

void HeadAttribution::Add(const torch::Tensor& lorsa_outputs,
                          const torch::Tensor& active,
                          const torch::Tensor& mhsa_outputs) {
  // Solve B c = o per token: B (N, d, K), o (N, d, M) -> c (N, K, M).
  const torch::Tensor basis = lorsa_outputs.to(torch::kDouble).transpose(1, 2);
  const torch::Tensor targets = mhsa_outputs.to(torch::kDouble).transpose(1, 2);
  const torch::Tensor coefficients =
      std::get<0>(torch::linalg_lstsq(basis, targets));
  const torch::Tensor flat_heads = active.reshape({-1});
  sums_.index_add_(0, flat_heads, coefficients.reshape({-1, sums_.size(1)}));
  counts_.index_add_(0, flat_heads, torch::ones_like(flat_heads));
}

torch::Tensor HeadAttribution::MeanCoefficients() const {
  return sums_ / counts_.clamp_min(1).to(torch::kDouble).unsqueeze(1);
}

torch::Tensor HeadAttribution::Contributions() const {
  const torch::Tensor clipped = MeanCoefficients().clamp_min(0);
  const torch::Tensor total = clipped.sum(1, /*keepdim=*/true);
  return torch::where(total > 0, clipped / total.clamp_min(1e-300),
                      torch::zeros_like(clipped));
}

torch::Tensor EffectiveHeadCounts(const torch::Tensor& contributions,
                                  double mass) {
  const torch::Tensor sorted =
      std::get<0>(contributions.sort(1, /*descending=*/true));
  const torch::Tensor cumulative = sorted.cumsum(1);
  // Heads needed = 1 + the number of prefixes still short of the mass.
  const torch::Tensor short_of = cumulative.lt(mass - 1e-12).sum(1) + 1;
  const torch::Tensor empty = contributions.sum(1).le(0);
  return torch::where(empty, torch::zeros_like(short_of), short_of)
      .clamp_max(contributions.size(1));
}

ErrorAgreement CompareErrors(const torch::Tensor& a, const torch::Tensor& b) {
  const torch::Tensor x = a.to(torch::kDouble), y = b.to(torch::kDouble);
  ErrorAgreement agreement;
  agreement.tokens = x.size(0);
  const auto cosine = [](const torch::Tensor& u, const torch::Tensor& v) {
    return torch::nn::functional::cosine_similarity(
               u, v,
               torch::nn::functional::CosineSimilarityFuncOptions().dim(1).eps(
                   1e-12))
        .mean()
        .item<double>();
  };
  agreement.cosine = cosine(x, y);
  agreement.cosine_shuffled = cosine(x, y.roll(x.size(0) / 2, 0));
  agreement.norm_correlation = PearsonCorrelation(x.norm(2, 1), y.norm(2, 1));
  return agreement;
}

torch::Tensor DirectLogitEffect(const torch::Tensor& direction,
                                const torch::Tensor& unembedding,
                                const torch::Tensor& norm_gain,
                                bool layer_norm) {
  torch::NoGradGuard no_grad;
  const torch::Tensor d = direction.to(torch::kDouble);
  const torch::Tensor written =
      (layer_norm ? d - d.mean() : d) * norm_gain.to(torch::kDouble);
  const torch::Tensor logits = unembedding.to(torch::kDouble).matmul(written);
  return logits - logits.mean();
}

double PearsonCorrelation(const torch::Tensor& x, const torch::Tensor& y) {
  const torch::Tensor dx = x.to(torch::kDouble) - x.to(torch::kDouble).mean();
  const torch::Tensor dy = y.to(torch::kDouble) - y.to(torch::kDouble).mean();
  const double denominator = std::sqrt(dx.pow(2).sum().item<double>() *
                                       dy.pow(2).sum().item<double>());
  return denominator > 0 ? (dx * dy).sum().item<double>() / denominator : 0;
}

namespace {

// Ranks 1..n of x's entries, ties sharing their average rank.
torch::Tensor AverageRanks(const torch::Tensor& x) {
  const torch::Tensor values = x.to(torch::kDouble).contiguous();
  const int64_t n = values.numel();
  const torch::Tensor order = values.argsort();
  torch::Tensor ranks = torch::empty({n}, torch::kDouble);
  const double* v = values.data_ptr<double>();
  const int64_t* o = order.data_ptr<int64_t>();
  double* r = ranks.data_ptr<double>();
  for (int64_t i = 0; i < n;) {
    int64_t j = i;
    while (j + 1 < n && v[o[j + 1]] == v[o[i]]) ++j;
    for (int64_t t = i; t <= j; ++t) r[o[t]] = (i + j) / 2.0 + 1;
    i = j + 1;
  }
  return ranks;
}

}  // namespace

double SpearmanCorrelation(const torch::Tensor& x, const torch::Tensor& y) {
  return PearsonCorrelation(AverageRanks(x), AverageRanks(y));
}

torch::Tensor RelativeSingularValues(const torch::Tensor& matrix) {
  const torch::Tensor singular =
      torch::linalg::svdvals(matrix.detach().to(torch::kDouble), c10::nullopt);
  return singular / singular[0];  // svdvals sorts descending.
}

double EffectiveRank(const torch::Tensor& matrix) {
  const torch::Tensor singular =
      torch::linalg::svdvals(matrix.detach().to(torch::kDouble), c10::nullopt);
  const torch::Tensor p = singular / singular.sum();
  // 0 log 0 = 0: a zero singular value adds nothing to the entropy.
  const torch::Tensor terms =
      torch::where(p > 0, -p * p.log(), torch::zeros_like(p));
  return std::exp(terms.sum().item<double>());
}

}  // namespace sparse_layers::analysis
