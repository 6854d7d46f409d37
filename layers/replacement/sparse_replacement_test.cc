#include "layers/replacement/sparse_replacement.h"

#include <torch/torch.h>

#include "config/config_validator.h"
#include "config/parameter_matching.h"
#include "gtest/gtest.h"
#include "layers/replacement/nmse.h"
#include "ops/core/parameter_count.h"
#include "ops/testing/gradient_check.h"

namespace sparse_layers::layers {
namespace {

// The sizes of the MxD authors' released form-equivalence.ipynb.
ReplacementOptions MxdOptions() {
  ReplacementOptions options;
  options.d_in = 16;
  options.d_out = 64;
  options.d_ffn = 16;
  options.n_experts = 32;
  options.top_k = 8;
  return options;
}

TEST(MxdTest, FactorisedForwardEqualsTheExplicitMixtureOfExperts) {
  torch::manual_seed(0);
  MxdImpl mxd(MxdOptions(), MxdImpl::Encoder::kGelu);
  {
    torch::NoGradGuard no_grad;
    mxd.decoder.normal_();  // D = 0 at init would make every expert zero.
    mxd.output_bias.normal_();
  }
  const torch::Tensor x = torch::randn({5, 16});
  const TopKCodes codes = mxd.Encode(x, 8);
  const torch::Tensor a = Densify(codes, 32);  // (B, N)
  const torch::Tensor z = mxd.Hidden(x);       // (B, H)
  // Eq. 3 with materialised experts W_n = D diag(c_n) (Lemma 1): (N, H, O).
  const torch::Tensor experts =
      mxd.decoder.unsqueeze(0) * mxd.experts.unsqueeze(1);
  const torch::Tensor explicit_mixture =
      torch::einsum("bn,bh,nho->bo", {a, z, experts}) + mxd.output_bias;
  HookPoint none;
  EXPECT_TRUE(
      torch::allclose(mxd.Forward(x, none), explicit_mixture, 1e-4, 1e-5));
  // The sparse (embedding_bag) and dense decoders agree.
  EXPECT_TRUE(torch::allclose(mxd.DecodeSparse(x, codes), mxd.DecodeDense(x, a),
                              1e-5, 1e-6));
}

TEST(MxdTest, ExpertRankEqualsDecoderRank) {
  torch::manual_seed(1);
  // A rank-5 D (H=16, O=64) and an expert vector without zeros (Lemma 1).
  const torch::Tensor d =
      torch::matmul(torch::randn({16, 5}), torch::randn({5, 64}));
  const torch::Tensor c = torch::rand({64}) + 0.1;
  EXPECT_EQ(torch::linalg_matrix_rank(d).item<int64_t>(), 5);
  EXPECT_EQ(torch::linalg_matrix_rank(d * c).item<int64_t>(), 5);
  // At random init every expert has full normalised rank (MxD,
  // arXiv:2505.21364 Lemma 1; App. B.4.2, Eq. 23).
  MxdImpl mxd(MxdOptions(), MxdImpl::Encoder::kGelu);
  const torch::Tensor full = torch::randn({16, 64});
  for (int n = 0; n < 32; ++n) {
    EXPECT_EQ(torch::linalg_matrix_rank(full * mxd.experts[n]).item<int64_t>(),
              16);
  }
}

TEST(MxdTest, OutputsTheBiasAtInitAndKeepsAtMostKCodes) {
  torch::manual_seed(2);
  MxdImpl mxd(MxdOptions(), MxdImpl::Encoder::kSwiGlu);
  mxd.InitOutputBias(torch::arange(64, torch::kFloat));
  const torch::Tensor x = torch::randn({7, 16});
  HookPoint none;
  EXPECT_TRUE(torch::equal(mxd.Forward(x, none),
                           torch::arange(64, torch::kFloat).expand({7, 64})));
  const torch::Tensor dense = Densify(mxd.Encode(x, 8), 32);
  EXPECT_TRUE((dense.ne(0).sum(-1) <= 8).all().item<bool>());
  EXPECT_TRUE((dense >= 0).all().item<bool>());

  ReplacementOptions options = MxdOptions();
  options.d_ffn = 24;
  options.normalise_decoder = false;
  TranscoderImpl skip(options, /*skip=*/true);
  skip.InitOutputBias(torch::ones({64}));
  EXPECT_TRUE(torch::equal(skip.Forward(x, none), torch::ones({7, 64})));
}

// The encoders of MxD's ablation (App. B.6.2, Fig. 19): z = phi(x E + b_e) with
// phi GELU or ReLU, and Swish-GLU's silu(x E + b_e) o (x E_glu + b_glu).
TEST(MxdTest, EncodersApplyTheirActivation) {
  torch::manual_seed(4);
  const torch::Tensor x = torch::randn({5, 16});
  MxdImpl gelu(MxdOptions(), MxdImpl::Encoder::kGelu);
  MxdImpl relu(MxdOptions(), MxdImpl::Encoder::kRelu);
  MxdImpl swiglu(MxdOptions(), MxdImpl::Encoder::kSwiGlu);
  const auto pre = [&](const MxdImpl& m) {
    return torch::matmul(x, m.encoder) + m.encoder_bias;
  };
  EXPECT_TRUE(torch::allclose(gelu.Hidden(x), torch::gelu(pre(gelu))));
  EXPECT_TRUE(torch::allclose(relu.Hidden(x), torch::relu(pre(relu))));
  EXPECT_TRUE(torch::allclose(
      swiglu.Hidden(x), torch::silu(pre(swiglu)) *
                            (torch::matmul(x, swiglu.glu) + swiglu.glu_bias)));
  EXPECT_FALSE(relu.glu.defined());
}

TEST(SteeringTest, AddingAlphaToOneCodeMovesTheOutputByItsDirection) {
  torch::manual_seed(3);
  MxdImpl mxd(MxdOptions(), MxdImpl::Encoder::kGelu);
  {
    torch::NoGradGuard no_grad;
    mxd.decoder.normal_();
  }
  const torch::Tensor x = torch::randn({4, 16});
  HookPoint none;
  HookPoint steer("codes");
  torch::Tensor delta = torch::zeros({32});
  delta[5] = 2.5;
  steer.Add(AddDirectionHook(delta, 1.0));
  const torch::Tensor moved = mxd.Forward(x, steer) - mxd.Forward(x, none);
  // Steering expert n adds alpha * (c_n o D^T z) (MxD, arXiv:2505.21364
  // Sec. 3.2.2).
  const torch::Tensor expected =
      2.5 * mxd.experts[5] * torch::matmul(mxd.Hidden(x), mxd.decoder);
  EXPECT_TRUE(torch::allclose(moved, expected, 1e-4, 1e-5));

  ReplacementOptions options = MxdOptions();
  options.d_ffn = 40;
  TranscoderImpl transcoder(options, /*skip=*/false);
  HookPoint steer_tc("codes");
  torch::Tensor delta_tc = torch::zeros({40});
  delta_tc[7] = -1.5;
  steer_tc.Add(AddDirectionHook(delta_tc, 1.0));
  const torch::Tensor moved_tc =
      transcoder.Forward(x, steer_tc) - transcoder.Forward(x, none);
  EXPECT_TRUE(torch::allclose(
      moved_tc, -1.5 * transcoder.decoder[7].expand({4, 64}), 1e-5, 1e-6));
}

TEST(ParameterMatchingTest, ModulesHaveTheFormulasParameterCounts) {
  ReplacementOptions options = MxdOptions();
  MxdImpl gelu(options, MxdImpl::Encoder::kGelu);
  MxdImpl swiglu(options, MxdImpl::Encoder::kSwiGlu);
  EXPECT_EQ(CountParameters(gelu),
            config::MxdParameters(16, 64, 16, 32, false));
  EXPECT_EQ(CountParameters(swiglu),
            config::MxdParameters(16, 64, 16, 32, true));
  options.d_ffn = 48;
  TranscoderImpl transcoder(options, false);
  TranscoderImpl skip(options, true);
  EXPECT_EQ(CountParameters(transcoder),
            config::TranscoderParameters(16, 64, 48));
  EXPECT_EQ(CountParameters(skip),
            config::TranscoderParameters(16, 64, 48) + 16 * 64);
  options.d_in = 64;
  SaeImpl sae(options);
  EXPECT_EQ(CountParameters(sae), config::TranscoderParameters(64, 64, 48));
}

TEST(NmseTest, MatchesAHandComputation) {
  const torch::Tensor y = torch::tensor({{3.0f, 4.0f}, {0.0f, 2.0f}});
  const torch::Tensor y_hat = torch::tensor({{3.0f, 5.0f}, {1.0f, 2.0f}});
  // Row norms 5 and 2: (0 + 1/5 + 1/2 + 0) / 4.
  EXPECT_NEAR(NormalisedMse(y_hat, y).item<double>(), (0.2 + 0.5) / 4, 1e-7);
}

TEST(RandomKTest, DrawsWithinHalfKInTrainingAndExactKInEval) {
  ReplacementOptions options = MxdOptions();
  options.random_k = true;
  torch::manual_seed(11);
  MxdImpl mxd(options, MxdImpl::Encoder::kGelu);
  mxd.train();
  std::set<int64_t> seen;
  for (int i = 0; i < 500; ++i) seen.insert(mxd.EffectiveK());
  EXPECT_EQ(*seen.begin(), 4);
  EXPECT_EQ(*seen.rbegin(), 12);
  mxd.eval();
  EXPECT_EQ(mxd.EffectiveK(), 8);
}

// K' follows the default generator, whose state checkpoints save and restore
// (models/checkpoints/checkpoint.h): the draws after a restore are the
// uninterrupted run's, and another seed draws another sequence.
TEST(RandomKTest, DrawsFollowTheRunsGeneratorState) {
  ReplacementOptions options = MxdOptions();
  options.random_k = true;
  torch::manual_seed(3);
  MxdImpl mxd(options, MxdImpl::Encoder::kGelu);
  mxd.train();
  for (int i = 0; i < 7; ++i) mxd.EffectiveK();
  at::Generator generator = at::detail::getDefaultCPUGenerator();
  const torch::Tensor saved = generator.get_state();
  std::vector<int64_t> uninterrupted, resumed;
  for (int i = 0; i < 20; ++i) uninterrupted.push_back(mxd.EffectiveK());
  generator.set_state(saved);
  for (int i = 0; i < 20; ++i) resumed.push_back(mxd.EffectiveK());
  EXPECT_EQ(uninterrupted, resumed);
  torch::manual_seed(4);
  std::vector<int64_t> other_seed;
  for (int i = 0; i < 20; ++i) other_seed.push_back(mxd.EffectiveK());
  EXPECT_NE(other_seed, uninterrupted);
}

TEST(DecoderNormTest, RowsStayUnitAndGradientsLoseTheirRadialPart) {
  torch::manual_seed(4);
  ReplacementOptions options = MxdOptions();
  options.d_ffn = 40;
  TranscoderImpl transcoder(options, false);
  {
    torch::NoGradGuard no_grad;
    transcoder.decoder.mul_(3.0);
  }
  transcoder.NormaliseDecoder();
  EXPECT_TRUE(
      torch::allclose(transcoder.decoder.norm(2, -1), torch::ones({40})));
  HookPoint none;
  NormalisedMse(transcoder.Forward(torch::randn({6, 16}), none),
                torch::randn({6, 64}))
      .backward();
  transcoder.ProjectDecoderGradients();
  EXPECT_LT((transcoder.decoder.grad() * transcoder.decoder)
                .sum(-1)
                .abs()
                .max()
                .item<double>(),
            1e-6);
}

// Central differences in double precision against autograd; small steps keep
// the top-k selection fixed, and unselected units get exactly zero gradient.
void CheckGradients(SparseReplacementImpl& layer,
                    const std::vector<torch::Tensor>& parameters) {
  layer.to(torch::kDouble);
  torch::manual_seed(5);
  const torch::Tensor x =
      torch::randn({3, layer.options().d_in}, torch::kDouble);
  const torch::Tensor y = torch::randn({3, 64}, torch::kDouble);
  HookPoint none;
  std::vector<std::pair<std::string, torch::Tensor>> named;
  for (const auto& item : layer.named_parameters()) {
    for (const torch::Tensor& p : parameters) {
      if (p.is_same(item.value())) named.emplace_back(item.key(), item.value());
    }
  }
  ASSERT_EQ(named.size(), parameters.size());
  const auto mismatches = testing::CheckGradients(
      [&] { return NormalisedMse(layer.Forward(x, none), y); }, named);
  EXPECT_TRUE(mismatches.empty()) << mismatches.front();
}

TEST(GradientTest, MxdMatchesFiniteDifferences) {
  torch::manual_seed(6);
  MxdImpl mxd(MxdOptions(), MxdImpl::Encoder::kSwiGlu);
  {
    torch::NoGradGuard no_grad;
    mxd.decoder.normal_();
  }
  CheckGradients(mxd, {mxd.encoder, mxd.glu, mxd.decoder, mxd.experts, mxd.gate,
                       mxd.gate_bias, mxd.output_bias});
  // Experts never selected in the batch receive no gradient at all.
  mxd.zero_grad();
  const torch::Tensor x = torch::randn({3, 16}, torch::kDouble);
  HookPoint none;
  mxd.Forward(x, none).sum().backward();
  const torch::Tensor selected = Densify(mxd.Encode(x, 8), 32).ne(0).any(0);
  const torch::Tensor unselected_grad =
      mxd.experts.grad().index({selected.logical_not()});
  EXPECT_EQ(unselected_grad.abs().sum().item<double>(), 0.0);
  EXPECT_EQ(mxd.gate.grad()
                .index({selected.logical_not()})
                .abs()
                .sum()
                .item<double>(),
            0.0);
}

TEST(GradientTest, TranscodersAndSaeMatchFiniteDifferences) {
  ReplacementOptions options = MxdOptions();
  options.d_ffn = 40;
  torch::manual_seed(7);
  TranscoderImpl transcoder(options, false);
  CheckGradients(transcoder, {transcoder.encoder, transcoder.encoder_bias,
                              transcoder.decoder, transcoder.output_bias});
  TranscoderImpl skip(options, true);
  {
    torch::NoGradGuard no_grad;
    skip.decoder.normal_();
  }
  CheckGradients(skip, {skip.encoder, skip.decoder, skip.skip});
  options.d_in = 64;  // An SAE reads the output space.
  SaeImpl sae(options);
  CheckGradients(sae,
                 {sae.encoder, sae.encoder_bias, sae.decoder, sae.output_bias});
  CpMoeImpl cp(MxdOptions(), 3);
  {
    torch::NoGradGuard no_grad;
    cp.u3.normal_();
  }
  CheckGradients(cp, {cp.encoder, cp.gate, cp.u1, cp.u2, cp.u3});
}

// Encode differentiates only the k selected pre-codes (SparseDot); the
// reference differentiates the dense ReLU and top-k. Same output and
// gradients, also where fewer than k pre-codes are positive.
TEST(EncodeTest, SparseEncoderGradientsEqualTheDenseReluTopK) {
  FeedForwardOptions options;
  options.d_model = 24;
  options.d_ffn = 48;
  options.n_experts = 40;
  options.top_k = 6;
  options.rank = 4;
  for (const char* name : {"transcoder", "skip_transcoder", "topk_sae",
                           "mxd_gelu", "mxd_swiglu", "cp_moe"}) {
    for (const double shift : {0.0, -3.0}) {
      torch::manual_seed(9);
      auto created = FeedForwardRegistry::Create(name, options);
      ASSERT_TRUE(created.ok()) << name;
      auto layer = std::dynamic_pointer_cast<SparseReplacementImpl>(*created);
      {
        torch::NoGradGuard no_grad;
        // Non-zero decoders (some start at zero) and, with shift, mostly
        // negative pre-codes.
        for (auto& p : layer->named_parameters()) {
          if (p.key().find("bias") == std::string::npos) {
            p.value().normal_(0, 0.3);
          } else {
            p.value().normal_(0, 0.3).add_(shift);
          }
        }
      }
      const torch::Tensor x = torch::randn({32, 24});
      const torch::Tensor target = torch::randn({32, 24});
      auto run = [&](bool reference) {
        layer->zero_grad();
        const TopKCodes codes =
            reference ? ReluTopK(layer->PreCodes(x), 6) : layer->Encode(x, 6);
        const torch::Tensor out = layer->DecodeSparse(x, codes);
        NormalisedMse(out, target).backward();
        std::vector<torch::Tensor> grads = {out.detach()};
        for (const auto& p : layer->parameters())
          grads.push_back(p.grad().clone());
        return grads;
      };
      const auto sparse = run(false), dense = run(true);
      ASSERT_EQ(sparse.size(), dense.size());
      for (size_t i = 0; i < sparse.size(); ++i) {
        EXPECT_TRUE(torch::allclose(sparse[i], dense[i], 1e-4, 1e-6))
            << name << " shift " << shift << " tensor " << i << " max diff "
            << (sparse[i] - dense[i]).abs().max().item<double>();
      }
    }
  }
}

// An SAE of width 24 on d = 8 under `sparsity`, its decoder rows of unequal
// norm.
SaeImpl SaeWith(config::FfnReplacement::Sparsity sparsity, double penalty,
                int64_t top_k = 0) {
  ReplacementOptions options{8, 8, 24, 0, top_k};
  options.sparsity = sparsity;
  options.sparsity_penalty = penalty;
  // A kernel wide enough for a few hundred steps on unit-scale inputs to
  // move the thresholds (the paper's 0.001 needs far more tokens).
  options.jump_relu_bandwidth = 0.05;
  SaeImpl sae(options);
  torch::NoGradGuard no_grad;
  sae.decoder.mul_(torch::rand({24, 1}) + 0.5);
  sae.encoder_bias.normal_(0, 0.3);
  return sae;
}

TEST(SparsityRuleTest,
     ReluL1CodesAreThePositivePreCodesWithADecoderWeightedL1) {
  torch::manual_seed(11);
  SaeImpl sae = SaeWith(config::FfnReplacement::RELU_L1, 0.25);
  const torch::Tensor x = torch::randn({6, 8});
  const torch::Tensor codes = torch::relu(sae.PreCodes(x));
  EXPECT_TRUE(torch::allclose(sae.DenseCodes(x), codes));
  // Anthropic's April 2024 penalty: lambda mean_b sum_n a_bn |d_n|.
  const double expected =
      0.25 * (codes * sae.decoder.norm(2, -1)).sum(1).mean().item<double>();
  EXPECT_NEAR(sae.AuxiliaryLoss().item<double>(), expected, 1e-6);
  EXPECT_TRUE(torch::allclose(sae.Forward(x, HookPoint()),
                              sae.DecodeDense(x, codes), 1e-5, 1e-6));
  // Encode lists exactly the positive codes; no penalty in evaluation.
  sae.eval();
  const TopKCodes listed = sae.Encode(x, 0);
  EXPECT_EQ(listed.values.size(1), codes.ne(0).sum(1).max().item<int64_t>());
  EXPECT_TRUE(torch::allclose(Densify(listed, 24), codes));
  EXPECT_FALSE(sae.AuxiliaryLoss().defined());
}

TEST(SparsityRuleTest, JumpReluGradientsAreTheStraightThroughEstimators) {
  // z = (0.30, 0.52, 0.90) against theta = 0.5 with eps = 0.1: only z = 0.52
  // is inside the kernel, |z - theta| / eps = 0.2 < 1/2.
  const torch::Tensor z =
      torch::tensor({{0.30f, 0.52f, 0.90f}}).requires_grad_(true);
  const torch::Tensor theta =
      torch::full({3}, 0.5f, torch::requires_grad(true));
  const torch::Tensor f = JumpRelu(z, theta, 0.1);
  EXPECT_TRUE(torch::allclose(f, torch::tensor({{0.0f, 0.52f, 0.90f}})));
  f.sum().backward();
  // Eq. 11: d/dtheta = -(theta / eps) K(.) = -5 inside the kernel.
  EXPECT_TRUE(torch::allclose(z.grad(), torch::tensor({{0.0f, 1.0f, 1.0f}})));
  EXPECT_TRUE(
      torch::allclose(theta.grad(), torch::tensor({0.0f, -5.0f, 0.0f})));
  // Eq. 12: the step's d/dtheta = -1 / eps = -10 there, and no z gradient.
  z.mutable_grad().zero_();
  theta.mutable_grad().zero_();
  JumpStep(z, theta, 0.1).sum().backward();
  EXPECT_TRUE(torch::allclose(z.grad(), torch::zeros({1, 3})));
  EXPECT_TRUE(
      torch::allclose(theta.grad(), torch::tensor({0.0f, -10.0f, 0.0f})));
}

TEST(SparsityRuleTest, JumpReluSaeKeepsPreCodesAboveItsThresholdsAndCountsL0) {
  torch::manual_seed(12);
  SaeImpl sae = SaeWith(config::FfnReplacement::JUMP_RELU, 0.1);
  {
    torch::NoGradGuard no_grad;
    sae.log_threshold.copy_(torch::empty({24}).uniform_(0.05, 0.8).log());
  }
  const torch::Tensor x = torch::randn({6, 8});
  const torch::Tensor pre = sae.PreCodes(x);
  const torch::Tensor above = pre > sae.log_threshold.exp();
  EXPECT_TRUE(torch::allclose(sae.DenseCodes(x), pre * above));
  EXPECT_NEAR(sae.AuxiliaryLoss().item<double>(),
              0.1 * above.sum(1).to(torch::kDouble).mean().item<double>(),
              1e-6);
  EXPECT_GT(above.sum().item<int64_t>(), 0);
  EXPECT_LT(above.sum().item<int64_t>(), above.numel());
}

TEST(SparsityRuleTest, BatchTopKKeepsKPerRowOnAverageAndLearnsItsThreshold) {
  torch::manual_seed(13);
  SaeImpl sae = SaeWith(config::FfnReplacement::BATCH_TOPK, 0, /*top_k=*/3);
  const torch::Tensor x = torch::randn({10, 8});
  const torch::Tensor relu = torch::relu(sae.PreCodes(x));
  const torch::Tensor codes = sae.DenseCodes(x);
  // k * B codes over the batch, the largest; rows keep unequal counts.
  const torch::Tensor kept = codes.ne(0);
  EXPECT_EQ(kept.sum().item<int64_t>(), 30);
  EXPECT_GT(kept.sum(1).max().item<int64_t>(),
            kept.sum(1).min().item<int64_t>());
  const double smallest_kept = codes.masked_select(kept).min().item<double>();
  EXPECT_EQ(relu.gt(smallest_kept).sum().item<int64_t>(), 29);
  // One step: the threshold is that smallest kept code.
  EXPECT_NEAR(
      sae.threshold_sum.item<double>() / sae.threshold_weight.item<double>(),
      smallest_kept, 1e-6);
  // Evaluation keeps the pre-codes above the threshold, per row.
  sae.eval();
  const torch::Tensor evaluated = sae.DenseCodes(x);
  EXPECT_TRUE(torch::allclose(
      evaluated, relu * (sae.PreCodes(x) > smallest_kept).to(torch::kFloat)));
  EXPECT_TRUE(torch::allclose(Densify(sae.Encode(x, 3), 24), evaluated));
}

// Rules without a per-row K list their codes when few units fire: encoder
// and decoder then read only the listed units (SparseDot, SparseDecode). The
// output, penalty and every gradient equal the dense path's (DenseCodes then
// DecodeDense), for SAEs, Transcoders and the MxD, in training and not.
TEST(SparsityRuleTest, ListedCodesEqualTheDenseCodesAndGradients) {
  FeedForwardOptions options;
  options.d_model = 16;
  options.n_experts = 640;
  options.top_k = 3;
  options.sparsity_penalty = 0.2;
  options.jump_relu_bandwidth = 0.3;
  for (const char* name : {"relu_sae", "jump_relu_sae", "batch_topk_sae",
                           "transcoder", "mxd_gelu"}) {
    for (const auto sparsity :
         {config::FfnReplacement::RELU_L1, config::FfnReplacement::JUMP_RELU,
          config::FfnReplacement::BATCH_TOPK}) {
      for (const bool training : {true, false}) {
        torch::manual_seed(21);
        FeedForwardOptions o = options;
        o.sparsity = sparsity;
        o.d_ffn = std::string(name) == "mxd_gelu" ? 32 : 640;
        auto created = FeedForwardRegistry::Create(name, o);
        ASSERT_TRUE(created.ok()) << name;
        auto layer = std::dynamic_pointer_cast<SparseReplacementImpl>(*created);
        if (layer->options().sparsity != sparsity) continue;  // Named rules.
        {
          torch::NoGradGuard no_grad;
          for (auto& p : layer->named_parameters()) {
            if (p.key() == "log_threshold") {
              p.value().copy_(
                  torch::empty_like(p.value()).uniform_(0.05, 0.6).log());
            } else if (p.key().find("bias") == std::string::npos) {
              p.value().normal_(0, 0.25);
            } else {
              // Few positive pre-codes: the listed regime.
              p.value().normal_(p.key() == "output_bias" ? 0.0 : -2.5, 0.1);
              // Unit 0 fires on most rows, where padding repeats it at 0.
              if (p.key() != "output_bias" &&
                  p.value().size(0) == layer->units()) {
                p.value()[0] = 3.0;
              }
            }
          }
          if (layer->threshold_sum.defined()) {
            layer->threshold_sum.fill_(0.2);
            layer->threshold_weight.fill_(1);
          }
        }
        layer->train(training);
        const torch::Tensor x = torch::randn({24, 16});
        const torch::Tensor target = torch::randn({24, 16});
        {
          torch::NoGradGuard no_grad;
          const int64_t widest =
              (layer->PreCodes(x) > -0.2).sum(1).max().item<int64_t>();
          ASSERT_GT(widest, 0) << name;
          ASSERT_LE(widest * 16, layer->units()) << name << ": not listed";
        }
        auto run = [&](bool listed) {
          layer->zero_grad();
          const torch::Tensor out =
              listed ? layer->Forward(x, HookPoint())
                     : layer->DecodeDense(x, layer->DenseCodes(x));
          torch::Tensor loss = NormalisedMse(out, target);
          const torch::Tensor penalty = layer->AuxiliaryLoss();
          if (penalty.defined()) loss = loss + penalty;
          loss.backward();
          std::vector<torch::Tensor> tensors = {out.detach(), loss.detach()};
          for (const auto& p : layer->parameters())
            tensors.push_back(p.grad().defined() ? p.grad().clone()
                                                 : torch::zeros_like(p));
          return tensors;
        };
        if (!training) {
          torch::NoGradGuard no_grad;
          // The listed codes densify to the dense ones, unit 0 included.
          const TopKCodes codes = layer->Encode(x, 3);
          EXPECT_TRUE(torch::allclose(Densify(codes, layer->units()),
                                      layer->DenseCodes(x), 1e-4, 1e-6))
              << name << " " << config::FfnReplacement::Sparsity_Name(sparsity);
        }
        const auto listed = run(true), dense = run(false);
        ASSERT_EQ(listed.size(), dense.size());
        for (size_t i = 0; i < listed.size(); ++i) {
          EXPECT_TRUE(torch::allclose(listed[i], dense[i], 1e-4, 1e-6))
              << name << " " << config::FfnReplacement::Sparsity_Name(sparsity)
              << " training " << training << " tensor " << i << " max diff "
              << (listed[i] - dense[i]).abs().max().item<double>();
        }
        if (training && sparsity == config::FfnReplacement::JUMP_RELU) {
          // Eqs. 11-12 fired: some pre-code sat within the kernel.
          EXPECT_GT(layer->log_threshold.grad().ne(0).sum().item<int64_t>(), 0)
              << name;
        }
      }
    }
  }
}

// BatchTopK picks the batch's k * B largest codes from each row's 4k largest;
// a row holding more than that of them falls back to the whole batch, so the
// set is a top-k over the batch either way.
TEST(SparsityRuleTest,
     BatchTopKKeepsTheBatchsLargestCodesWhereOneRowHoldsMost) {
  torch::manual_seed(16);
  SaeImpl sae = SaeWith(config::FfnReplacement::BATCH_TOPK, 0, /*top_k=*/1);
  for (const double scale : {1.0, 100.0}) {
    torch::Tensor x = torch::randn({10, 8});
    x[0].mul_(scale);  // At 100 row 0 holds the batch's 10 largest codes.
    const torch::Tensor relu = torch::relu(sae.PreCodes(x)).detach();
    const torch::Tensor expected = std::get<0>(relu.reshape({-1}).topk(10));
    const torch::Tensor codes = sae.DenseCodes(x).detach();
    const torch::Tensor kept = std::get<0>(codes.reshape({-1}).topk(10));
    EXPECT_TRUE(torch::allclose(kept, expected)) << "scale " << scale;
    EXPECT_EQ(codes.ne(0).sum().item<int64_t>(), 10) << "scale " << scale;
    if (scale > 1) EXPECT_EQ(codes[0].ne(0).sum().item<int64_t>(), 10);
  }
}

// The training rule at work: a larger penalty buys a smaller L0.
TEST(SparsityRuleTest, PenaltiesTradeReconstructionForSparsity) {
  for (const auto sparsity :
       {config::FfnReplacement::RELU_L1, config::FfnReplacement::JUMP_RELU}) {
    std::vector<double> l0;
    for (const double penalty : {1e-4, 0.5}) {
      torch::manual_seed(14);
      SaeImpl sae = SaeWith(sparsity, penalty);
      // log theta moves about lr per step from log(0.001): 400 steps at 0.03.
      torch::optim::Adam adam(sae.parameters(), 3e-2);
      const torch::Tensor x = torch::randn({256, 8});
      for (int step = 0; step < 400; ++step) {
        adam.zero_grad();
        const torch::Tensor loss =
            NormalisedMse(sae.Forward(x, HookPoint()), x);
        (loss + sae.AuxiliaryLoss()).backward();
        adam.step();
      }
      sae.eval();
      l0.push_back(sae.DenseCodes(x)
                       .ne(0)
                       .sum(1)
                       .to(torch::kDouble)
                       .mean()
                       .item<double>());
    }
    EXPECT_LT(l0[1], 0.5 * l0[0])
        << config::FfnReplacement::Sparsity_Name(sparsity) << ": L0 " << l0[0]
        << " -> " << l0[1];
  }
}

TEST(SparsityRuleTest, OtherReplacementsTakeTheRuleToo) {
  torch::manual_seed(15);
  ReplacementOptions options = MxdOptions();
  options.sparsity = config::FfnReplacement::RELU_L1;
  options.sparsity_penalty = 0.1;
  MxdImpl mxd(options, MxdImpl::Encoder::kGelu);
  const torch::Tensor x = torch::randn({5, 16});
  const torch::Tensor gates = torch::relu(mxd.PreCodes(x));
  EXPECT_TRUE(torch::allclose(mxd.Forward(x, HookPoint()),
                              mxd.DecodeDense(x, gates), 1e-5, 1e-6));
  // The MxD's unit-norm expert rows c_n make the penalty a plain L1
  // (arXiv:2505.21364 App. B.6.1).
  EXPECT_NEAR(mxd.AuxiliaryLoss().item<double>(),
              0.1 * gates.sum(1).mean().item<double>(), 1e-5);
  // Decoding cost counts every unit: the rule has no K.
  EXPECT_EQ(mxd.ForwardFlopsPerToken(),
            2 * 16 * 16 + 2 * 16 * 64 + 2 * 16 * 32 + 2 * 32 * 64);
}

TEST(RegistryTest, ReplacementLayersAreNamedFeedForwards) {
  FeedForwardOptions options;
  options.d_model = 16;
  options.d_ffn = 32;
  options.n_experts = 24;
  options.top_k = 4;
  options.rank = 4;
  for (const char* name : {"transcoder", "skip_transcoder", "topk_sae",
                           "batch_topk_sae", "relu_sae", "jump_relu_sae",
                           "mxd_gelu", "mxd_relu", "mxd_swiglu", "cp_moe"}) {
    auto layer = FeedForwardRegistry::Create(name, options);
    ASSERT_TRUE(layer.ok()) << name;
    // The layer's rule is the one the config reads from the name.
    config::FfnReplacement spec;
    spec.set_ffn(name);
    EXPECT_EQ(std::dynamic_pointer_cast<SparseReplacementImpl>(*layer)
                  ->options()
                  .sparsity,
              config::EffectiveSparsity(spec))
        << name;
    // PreCodes is affine: encoding a mean of rows is the mean of encodings.
    auto replacement = std::dynamic_pointer_cast<SparseReplacementImpl>(*layer);
    const torch::Tensor rows = torch::randn({5, 16});
    EXPECT_TRUE(torch::allclose(replacement->PreCodes(rows.mean(0, true)),
                                replacement->PreCodes(rows).mean(0, true), 1e-5,
                                1e-5))
        << name;
    HookPoint none;
    EXPECT_EQ(
        (*layer)->Forward(torch::randn({2, 3, 16}).view({6, 16}), none).sizes(),
        (std::vector<int64_t>{6, 16}))
        << name;
  }
}

TEST(CpMoeTest, ExpertsHaveRankAtMostRAndTheBudgetRuleHolds) {
  torch::manual_seed(8);
  ReplacementOptions options = MxdOptions();
  CpMoeImpl cp(options, /*rank=*/3);
  {
    torch::NoGradGuard no_grad;
    cp.u3.normal_();
  }
  for (int n = 0; n < 32; n += 7) {
    const torch::Tensor expert =
        torch::matmul(cp.u2 * cp.u1[n], cp.u3);  // (H, O)
    EXPECT_EQ(torch::linalg_matrix_rank(expert).item<int64_t>(), 3);
  }
  // Forward equals the explicit mixture of those experts.
  const torch::Tensor x = torch::randn({4, 16});
  const TopKCodes codes = cp.Encode(x, 8);
  const torch::Tensor a = Densify(codes, 32);
  const torch::Tensor z = torch::gelu(torch::matmul(x, cp.encoder));
  const torch::Tensor experts =
      torch::einsum("hr,nr,ro->nho", {cp.u2, cp.u1, cp.u3});
  EXPECT_TRUE(torch::allclose(cp.DecodeSparse(x, codes),
                              torch::einsum("bn,bh,nho->bo", {a, z, experts}),
                              1e-4, 1e-5));
  // The N that fills a Transcoder's budget leaves less than one expert over.
  const int64_t budget = config::TranscoderParameters(768, 768, 24576);
  const int64_t n =
      config::CpMoeExpertsMatchingTranscoder(768, 768, 3072, 96, 24576);
  const int64_t used =
      768 * 3072 + 3072 + 3072 * 96 + 96 * 768 + 768 + n * (768 + 1 + 96);
  EXPECT_EQ(config::CpMoeParameters(768, 768, 3072, 96, n), used);
  // The layer holds exactly that many parameters.
  ReplacementOptions matched{768, 768, 3072, n, 32};
  int64_t held = 0;
  for (const torch::Tensor& p : CpMoeImpl(matched, 96).parameters()) {
    held += p.numel();
  }
  EXPECT_EQ(held, used);
  EXPECT_LE(used, budget);
  EXPECT_GT(used + 768 + 1 + 96, budget);
}

}  // namespace
}  // namespace sparse_layers::layers
