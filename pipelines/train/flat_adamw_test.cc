#include "pipelines/train/flat_adamw.h"

#include <torch/torch.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "models/checkpoints/checkpoint.h"
#include "pipelines/train/op_profile.h"

namespace sparse_layers::train {
namespace {

// Shapes with odd sizes (vector tails) and one above ATen's 32768-element
// grain (split across threads); the 1-D ones form the undecayed group.
const std::vector<std::vector<int64_t>> kShapes = {
    {37, 19}, {300, 129}, {5, 3, 7}, {64, 64}, {19}, {129}, {1}};

std::vector<torch::Tensor> Parameters(uint64_t seed) {
  torch::manual_seed(seed);
  std::vector<torch::Tensor> parameters;
  for (const auto& shape : kShapes) {
    parameters.push_back(torch::randn(shape).requires_grad_());
  }
  return parameters;
}

// Gradients of step `step` for every parameter, the same for every optimizer.
std::vector<torch::Tensor> Gradients(int step) {
  torch::manual_seed(1000 + step);
  std::vector<torch::Tensor> gradients;
  for (const auto& shape : kShapes) gradients.push_back(torch::randn(shape));
  return gradients;
}

// Backward of sum(p * g): autograd accumulates exactly g into p.grad().
void Backward(const std::vector<torch::Tensor>& parameters, int step,
              const std::vector<bool>& reached = {}) {
  const std::vector<torch::Tensor> gradients = Gradients(step);
  torch::Tensor loss = torch::zeros({});
  for (size_t i = 0; i < parameters.size(); ++i) {
    if (reached.empty() || reached[i]) {
      loss = loss + (parameters[i] * gradients[i]).sum();
    }
  }
  loss.backward();
}

constexpr double kDecay = 0.1;

std::vector<FlatAdamWGroup> Groups(const std::vector<torch::Tensor>& params) {
  FlatAdamWGroup decayed{{}, kDecay}, not_decayed{{}, 0};
  for (const torch::Tensor& p : params) {
    (p.dim() >= 2 ? decayed : not_decayed).parameters.push_back(p);
  }
  return {decayed, not_decayed};
}

FlatAdamWOptions Options() {
  FlatAdamWOptions options;
  options.learning_rate = 3e-3;
  options.beta1 = 0.9;
  options.beta2 = 0.95;
  options.epsilon = 1e-8;
  return options;
}

std::unique_ptr<torch::optim::AdamW> TorchAdamW(
    const std::vector<torch::Tensor>& params) {
  const FlatAdamWOptions flat = Options();
  auto options = torch::optim::AdamWOptions(flat.learning_rate)
                     .betas({flat.beta1, flat.beta2})
                     .eps(flat.epsilon)
                     .weight_decay(kDecay);
  auto no_decay = options;
  no_decay.weight_decay(0);
  std::vector<torch::optim::OptimizerParamGroup> groups;
  const std::vector<FlatAdamWGroup> split = Groups(params);
  groups.emplace_back(split[0].parameters,
                      std::make_unique<torch::optim::AdamWOptions>(options));
  groups.emplace_back(split[1].parameters,
                      std::make_unique<torch::optim::AdamWOptions>(no_decay));
  return std::make_unique<torch::optim::AdamW>(std::move(groups), options);
}

void SetLearningRate(torch::optim::AdamW& adamw, double lr) {
  for (auto& group : adamw.param_groups()) {
    static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
  }
}

// A scheduled learning rate, so a stale one would show.
double LearningRate(int step) { return 3e-3 * (1.0 - 0.1 * step); }

// torch::optim::AdamW's state as a checkpoint holds it.
layers::AdamWState TorchState(torch::optim::AdamW& adamw) {
  layers::AdamWState state;
  for (const auto& group : adamw.param_groups()) {
    auto& slots = state.emplace_back();
    for (const torch::Tensor& p : group.params()) {
      layers::AdamWSlot& slot = slots.emplace_back();
      auto it =
          adamw.state().find(c10::guts::to_string(p.unsafeGetTensorImpl()));
      if (it == adamw.state().end()) continue;
      const auto& adam =
          static_cast<const torch::optim::AdamWParamState&>(*it->second);
      slot = {adam.step(), adam.exp_avg(), adam.exp_avg_sq()};
    }
  }
  return state;
}

void ExpectBitIdentical(const std::vector<torch::Tensor>& a,
                        const std::vector<torch::Tensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(torch::equal(a[i], b[i])) << "tensor " << i;
  }
}

void ExpectBitIdentical(const layers::AdamWState& a,
                        const layers::AdamWState& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t g = 0; g < a.size(); ++g) {
    ASSERT_EQ(a[g].size(), b[g].size());
    for (size_t i = 0; i < a[g].size(); ++i) {
      EXPECT_EQ(a[g][i].step, b[g][i].step) << g << "." << i;
      EXPECT_TRUE(torch::equal(a[g][i].exp_avg, b[g][i].exp_avg))
          << "exp_avg " << g << "." << i;
      EXPECT_TRUE(torch::equal(a[g][i].exp_avg_sq, b[g][i].exp_avg_sq))
          << "exp_avg_sq " << g << "." << i;
    }
  }
}

std::unique_ptr<FlatAdamW> Flat(const std::vector<torch::Tensor>& params) {
  auto flat = FlatAdamW::Create(Groups(params), Options());
  EXPECT_TRUE(flat.ok()) << flat.status();
  return *std::move(flat);
}

// One step of both optimizers on the same gradients.
void StepBoth(torch::optim::AdamW& adamw,
              const std::vector<torch::Tensor>& reference, FlatAdamW& flat,
              const std::vector<torch::Tensor>& params, int step) {
  adamw.zero_grad();
  flat.ZeroGrad();
  Backward(reference, step);
  Backward(params, step);
  adamw.step();
  flat.Step();
}

TEST(FlatAdamWTest, CreateKeepsValuesAndMakesGradientsZeroViews) {
  std::vector<torch::Tensor> params = Parameters(1);
  std::vector<torch::Tensor> before;
  for (const auto& p : params) before.push_back(p.detach().clone());
  auto flat = Flat(params);
  ExpectBitIdentical(params, before);
  for (const auto& p : params) {
    ASSERT_TRUE(p.grad().defined());
    EXPECT_EQ(p.grad().count_nonzero().item<int64_t>(), 0);
  }
  // The decayed group's parameters are adjacent in one buffer.
  EXPECT_EQ(params[1].data_ptr<float>(),
            params[0].data_ptr<float>() + params[0].numel());
}

TEST(FlatAdamWTest, EqualsTorchAdamWBitForBit) {
  std::vector<torch::Tensor> reference = Parameters(1);
  std::vector<torch::Tensor> params = Parameters(1);
  auto adamw = TorchAdamW(reference);
  auto flat = Flat(params);
  for (int step = 0; step < 6; ++step) {
    SetLearningRate(*adamw, LearningRate(step));
    flat->set_learning_rate(LearningRate(step));
    StepBoth(*adamw, reference, *flat, params, step);
    ExpectBitIdentical(params, reference);
  }
  ExpectBitIdentical(flat->State(), TorchState(*adamw));
}

// Whole-buffer ops: one addcdiv_ per group, not one per parameter.
TEST(FlatAdamWTest, StepIsOneUpdatePerGroup) {
  std::vector<torch::Tensor> params = Parameters(1);
  auto flat = Flat(params);
  for (int step = 0; step < 2; ++step) {
    flat->ZeroGrad();
    Backward(params, step);
    int64_t updates = -1;
    for (const OpTime& op : ProfileOps([&] { flat->Step(); }).ops) {
      if (op.name == "aten::addcdiv_") updates = op.calls;
    }
    EXPECT_EQ(updates, 2) << "step " << step;
  }
}

TEST(FlatAdamWTest, RepeatedRunsAreBitIdentical) {
  std::vector<torch::Tensor> runs[2] = {Parameters(2), Parameters(2)};
  layers::AdamWState states[2];
  for (int run = 0; run < 2; ++run) {
    auto flat = Flat(runs[run]);
    for (int step = 0; step < 4; ++step) {
      flat->ZeroGrad();
      Backward(runs[run], step);
      flat->ClipGradNorm(50.0);
      flat->Step();
    }
    states[run] = flat->State();
  }
  ExpectBitIdentical(runs[0], runs[1]);
  ExpectBitIdentical(states[0], states[1]);
}

// A torch::optim::AdamW checkpoint whose steps differ per parameter (one no
// loss reached at first) continues as torch::optim::AdamW would.
TEST(FlatAdamWTest, ContinuesTorchAdamWStateWithUnequalSteps) {
  std::vector<torch::Tensor> reference = Parameters(3);
  auto adamw = TorchAdamW(reference);
  std::vector<bool> reached(kShapes.size(), true);
  reached[1] = reached[5] = false;
  for (int step = 0; step < 2; ++step) {
    adamw->zero_grad();
    Backward(reference, step, reached);
    adamw->step();
  }
  std::vector<torch::Tensor> params;
  for (const auto& p : reference) {
    params.push_back(p.detach().clone().requires_grad_());
  }
  auto flat = Flat(params);
  ASSERT_TRUE(flat->LoadState(TorchState(*adamw)).ok());
  for (int step = 2; step < 5; ++step) {
    StepBoth(*adamw, reference, *flat, params, step);
  }
  ExpectBitIdentical(params, reference);
  ExpectBitIdentical(flat->State(), TorchState(*adamw));
}

TEST(FlatAdamWTest, LoadStateRejectsOtherShapes) {
  std::vector<torch::Tensor> params = Parameters(4);
  auto flat = Flat(params);
  layers::AdamWState state = flat->State();
  state[0][0] = {1, torch::zeros({2, 2}), torch::zeros({2, 2})};
  EXPECT_EQ(flat->LoadState(state).code(), absl::StatusCode::kInvalidArgument);
}

TEST(FlatAdamWTest, CreateRejectsAParameterListedTwice) {
  std::vector<torch::Tensor> params = Parameters(4);
  auto flat = FlatAdamW::Create({{{params[0]}, 0}, {{params[0]}, 0}}, {});
  EXPECT_EQ(flat.status().code(), absl::StatusCode::kInvalidArgument);
}

// Clipping from the flat buffers against torch::nn::utils::clip_grad_norm_.
void CheckClipping(double max_norm) {
  std::vector<torch::Tensor> reference = Parameters(5);
  std::vector<torch::Tensor> params = Parameters(5);
  auto flat = Flat(params);
  Backward(reference, 0);
  Backward(params, 0);
  const double expected =
      torch::nn::utils::clip_grad_norm_(reference, max_norm);
  const double norm = flat->ClipGradNorm(max_norm);
  EXPECT_NEAR(norm, expected, 1e-5 * expected);
  for (size_t i = 0; i < params.size(); ++i) {
    EXPECT_TRUE(torch::allclose(params[i].grad(), reference[i].grad(),
                                /*rtol=*/1e-5, /*atol=*/0))
        << "gradient " << i;
  }
}

TEST(FlatAdamWTest, ClipGradNormClipsAsClipGradNorm) { CheckClipping(1.0); }

TEST(FlatAdamWTest, ClipGradNormAboveTheNormLeavesGradientsUnchanged) {
  std::vector<torch::Tensor> params = Parameters(5);
  auto flat = Flat(params);
  Backward(params, 0);
  const std::vector<torch::Tensor> gradients = Gradients(0);
  const double norm = flat->ClipGradNorm(1e6);
  CheckClipping(1e6);
  std::vector<torch::Tensor> after;
  for (const auto& p : params) after.push_back(p.grad());
  ExpectBitIdentical(after, gradients);
  // max_norm 0: the norm alone, as the trainer logs it without clipping.
  EXPECT_EQ(flat->ClipGradNorm(0), norm);
  ExpectBitIdentical(after, gradients);
}

struct Weights : torch::nn::Module {
  explicit Weights(const std::vector<torch::Tensor>& params) {
    for (size_t i = 0; i < params.size(); ++i) {
      register_parameter("p" + std::to_string(i), params[i]);
    }
  }
};

// The checkpoint stores each parameter's state by name from the views, and a
// run resumed from it continues bit for bit.
TEST(FlatAdamWTest, CheckpointRoundTripResumesBitForBit) {
  std::vector<torch::Tensor> params = Parameters(6);
  auto flat = Flat(params);
  Weights weights(params);
  for (int step = 0; step < 3; ++step) {
    flat->ZeroGrad();
    Backward(params, step);
    flat->Step();
  }
  const std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/flat.pt";
  const layers::AdamWState saved = flat->State();
  ASSERT_TRUE(layers::SaveCheckpoint(path, weights, &saved, {}).ok());

  std::vector<torch::Tensor> resumed = Parameters(7);
  Weights resumed_weights(resumed);
  layers::AdamWState loaded;
  ASSERT_TRUE(layers::LoadCheckpoint(path, resumed_weights, &loaded).ok());
  auto resumed_flat = Flat(resumed);
  ASSERT_TRUE(resumed_flat->LoadState(loaded).ok());
  ExpectBitIdentical(resumed_flat->State(), saved);
  for (int step = 3; step < 5; ++step) {
    for (auto* adamw : {flat.get(), resumed_flat.get()}) adamw->ZeroGrad();
    Backward(params, step);
    Backward(resumed, step);
    flat->Step();
    resumed_flat->Step();
  }
  ExpectBitIdentical(resumed, params);
  ExpectBitIdentical(resumed_flat->State(), flat->State());
}

}  // namespace
}  // namespace sparse_layers::train
