#include "pipelines/train/trainer.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "base/common/digest.h"
#include "base/common/file_io.h"
#include "config/config_loader.h"
#include "gtest/gtest.h"
#include "layers/attention/causal_attention.h"
#include "layers/attention/lorsa.h"
#include "layers/ffn/feed_forward.h"
#include "models/checkpoints/checkpoint.h"
#include "pipelines/activations/activation_shards.h"
#include "pipelines/train/next_token_objective.h"
#include "pipelines/train/replacement_objectives.h"

namespace sparse_layers::train {
namespace {

std::string Runfile(const std::string& path) {
  return std::string(std::getenv("TEST_SRCDIR")) + "/sparse_layers/" + path;
}

config::ExperimentConfig TinyConfig() {
  auto config = config::LoadExperimentConfig(
      {Runfile("pipelines/train/testdata/tiny.textproto")});
  EXPECT_TRUE(config.ok()) << config.status();
  return *config;
}

TrainerOptions Options(const std::string& name) {
  const std::string dir = std::string(std::getenv("TEST_TMPDIR")) + "/" + name;
  TrainerOptions options;
  options.train_manifest =
      Runfile("datasets/text/shards/train/train.tokens.textproto");
  options.validation_manifest =
      Runfile("datasets/text/shards/validation/validation.tokens.textproto");
  options.checkpoint_path = dir + ".pt";
  options.log_csv_path = dir + ".csv";
  options.summary_path = dir + ".summary.textproto";
  return options;
}

TEST(TrainerTest, SameConfigAndThreadsGiveBitIdenticalCheckpoints) {
  const config::ExperimentConfig config = TinyConfig();
  auto first = Train(config, Options("first"), MakeNextTokenObjective);
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = Train(config, Options("second"), MakeNextTokenObjective);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(first->steps(), 12);
  EXPECT_EQ(first->stopped_by(), "max_steps");
  EXPECT_EQ(first->checkpoint_sha256(), second->checkpoint_sha256());
  EXPECT_EQ(*Sha256OfFile(Options("first").checkpoint_path),
            *Sha256OfFile(Options("second").checkpoint_path));
  EXPECT_EQ(*ReadFileToString(Options("first").log_csv_path),
            *ReadFileToString(Options("second").log_csv_path));
  EXPECT_EQ(first->sample_ids_size(), 4);
  EXPECT_EQ(first->sample_prompt_ids_size(), 16);
  // Training reduced the loss from ln(8192) = 9.01.
  EXPECT_LT(first->validation_loss(), 9.0);
  EXPECT_NEAR(first->validation_perplexity(),
              std::exp(first->validation_loss()), 1e-6);

  // A different seed gives a different model.
  config::ExperimentConfig reseeded = config;
  reseeded.mutable_runtime()->set_seed(8);
  auto third = Train(reseeded, Options("third"), MakeNextTokenObjective);
  ASSERT_TRUE(third.ok());
  EXPECT_NE(third->checkpoint_sha256(), first->checkpoint_sha256());
}

TEST(TrainerTest, CsvLogHasOneRowPerStepAndValidationAtTheCadence) {
  auto summary = Train(TinyConfig(), Options("csv"), MakeNextTokenObjective);
  ASSERT_TRUE(summary.ok());
  const std::string csv = *ReadFileToString(Options("csv").log_csv_path);
  int rows = 0, validated = 0;
  size_t start = csv.find('\n') + 1;
  while (start < csv.size()) {
    const size_t end = csv.find('\n', start);
    const std::string row = csv.substr(start, end - start);
    ++rows;
    if (row.back() != ',') ++validated;
    start = end + 1;
  }
  EXPECT_EQ(rows, 12);
  EXPECT_EQ(validated, 3);  // Steps 4, 8 and 12.
}

TEST(TrainerTest, BudgetsStopWithinOneStep) {
  config::BudgetConfig budget;
  budget.set_max_tokens(1000);
  EXPECT_EQ(ComputeStepBudget(budget, 128, 10).steps, 7);
  EXPECT_EQ(ComputeStepBudget(budget, 128, 10).stopped_by, "max_tokens");
  budget.set_max_flops(3.0 * 10 * 128 * 5.5);  // 5.5 steps of training FLOPs.
  const StepBudget flops = ComputeStepBudget(budget, 128, 10);
  EXPECT_EQ(flops.steps, 5);
  EXPECT_EQ(flops.stopped_by, "max_flops");
  budget.set_max_steps(3);
  EXPECT_EQ(ComputeStepBudget(budget, 128, 10).steps, 3);

  // In a real run: the FLOPs spent are within one step of the budget.
  config::ExperimentConfig config = TinyConfig();
  config.mutable_budget()->set_max_steps(0);
  config.mutable_budget()->set_max_flops(2.5e8);
  auto summary = Train(config, Options("flops"), MakeNextTokenObjective);
  ASSERT_TRUE(summary.ok()) << summary.status();
  const double per_step = summary->flops() / summary->steps();
  EXPECT_LE(summary->flops(), 2.5e8);
  EXPECT_GT(summary->flops() + per_step, 2.5e8);
  EXPECT_EQ(summary->stopped_by(), "max_flops");
}

// Every registered FFN, replacement layers included, trains from a config.
TEST(TrainerTest, EveryRegisteredFfnTrainsForASmokeRun) {
  const std::vector<std::string> names = layers::FeedForwardRegistry::Names();
  EXPECT_GE(names.size(), 21u);
  for (const std::string& name : names) {
    config::ExperimentConfig config = TinyConfig();
    config.mutable_model()->set_ffn(name);
    const bool mixture = name.find("moe") != std::string::npos ||
                         name == "switch" || name == "mohd_swiglu";
    const bool product_keys = name.find("sgatlin") == 0 || name == "peer";
    config.mutable_model()->set_n_experts(mixture ? 8 : product_keys ? 4 : 48);
    config.mutable_model()->set_top_k(mixture ? 2 : 4);
    if (product_keys) {
      config.mutable_model()->set_d_ffn(64);  // 8 x 8 product keys per channel.
      config.mutable_model()->set_d_key(16);
    }
    config.mutable_budget()->set_max_steps(4);
    config.mutable_eval()->set_sample_tokens(0);
    auto summary =
        Train(config, Options("ffn_" + name), MakeNextTokenObjective);
    ASSERT_TRUE(summary.ok()) << name << ": " << summary.status();
    EXPECT_TRUE(std::isfinite(summary->validation_loss())) << name;
    // ln(8192) = 9.01 at init; four steps must not make it worse.
    EXPECT_LT(summary->validation_loss(), 9.3) << name;
    std::printf("ffn %s: validation loss %.4f after 4 steps\n", name.c_str(),
                summary->validation_loss());
  }
}

// MoHD in both attention and FFN, expansion x2, named in a config.
TEST(TrainerTest, MohdModelTrainsFromAConfig) {
  config::ExperimentConfig config = TinyConfig();
  config.mutable_model()->set_d_model(64);
  config.mutable_model()->set_attention("mohd");
  config.mutable_model()->set_attention_inner(32);
  config.mutable_model()->set_ffn("mohd_swiglu");
  config.mutable_model()->set_n_experts(4);
  config.mutable_model()->set_top_k(2);
  config.mutable_budget()->set_max_steps(4);
  config.mutable_eval()->set_sample_tokens(0);
  auto summary = Train(config, Options("mohd_model"), MakeNextTokenObjective);
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_LT(summary->validation_loss(), 9.3);
}

// Lorsa as the model's attention, named in a config with its layer options.
TEST(TrainerTest, LorsaModelTrainsFromAConfig) {
  config::ExperimentConfig config = TinyConfig();
  config.mutable_model()->set_attention("lorsa");
  config.mutable_model()->set_positions(config::ModelConfig::ROTARY);
  config.mutable_model()->mutable_layer_options()->set_lorsa_ov_heads(64);
  config.mutable_model()->mutable_layer_options()->set_lorsa_top_k(8);
  config.mutable_budget()->set_max_steps(4);
  config.mutable_eval()->set_sample_tokens(0);
  auto summary = Train(config, Options("lorsa_model"), MakeNextTokenObjective);
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_LT(summary->validation_loss(), 9.3);
}

// A noiseless upcycle of a trained dense ReLU model is the same function
// (every expert a copy, gate weights summing to one); training then goes on.
TEST(TrainerTest, UpcycledMixtureStartsAsItsDenseParent) {
  config::ExperimentConfig parent = TinyConfig();
  parent.mutable_model()->set_ffn("relu_mlp");
  parent.mutable_budget()->set_max_steps(4);
  parent.mutable_eval()->set_sample_tokens(0);
  ASSERT_TRUE(
      Train(parent, Options("dense_parent"), MakeNextTokenObjective).ok());
  const std::string parent_path = Options("dense_parent").checkpoint_path;

  config::ExperimentConfig child = parent;
  child.mutable_model()->set_ffn("moe_x");
  child.mutable_model()->set_n_experts(4);
  child.mutable_model()->set_top_k(2);
  auto options = layers::GptOptionsFromConfig(child.model());
  ASSERT_TRUE(options.ok());
  auto upcycled = layers::GptImpl::Create(*options);
  ASSERT_TRUE(upcycled.ok());
  ASSERT_TRUE(InitializeFromCheckpoint(parent_path, **upcycled, 0.0).ok());
  auto dense =
      layers::GptImpl::Create(*layers::GptOptionsFromConfig(parent.model()));
  ASSERT_TRUE(layers::LoadCheckpoint(parent_path, **dense, nullptr).ok());
  {
    torch::NoGradGuard no_grad;
    (*dense)->eval();
    (*upcycled)->eval();
    const torch::Tensor tokens = torch::randint(0, 8192, {2, 16}, torch::kLong);
    EXPECT_TRUE(torch::allclose((*upcycled)->forward(tokens),
                                (*dense)->forward(tokens), 1e-4, 1e-5));
  }

  child.mutable_init()->set_upcycle_noise(0.01);
  TrainerOptions child_options = Options("upcycled_child");
  child_options.init_from = parent_path;
  auto summary = Train(child, child_options, MakeNextTokenObjective);
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_LT(summary->validation_loss(), 9.3);
}

// An activation cache of block 0's FFN (or, with site "attn", its attention)
// made from `checkpoint`: random inputs x and y = tanh(x W) for a fixed W,
// `rows` rows of split `split`.
std::string WriteFfnCache(const std::string& checkpoint,
                          const std::string& split, int64_t rows,
                          const std::string& site = "ffn") {
  const std::string dir =
      std::string(std::getenv("TEST_TMPDIR")) + "/cache_" + site;
  std::filesystem::create_directories(dir);
  datasets::ActivationManifest header;
  header.set_split(split);
  header.set_layer(0);
  header.set_hook_in("blocks.0." + site + ".hook_in");
  header.set_hook_out("blocks.0." + site + ".hook_out");
  header.set_d_in(32);
  header.set_d_out(32);
  header.set_sequence_length(32);
  header.set_checkpoint_sha256(*Sha256OfFile(checkpoint));
  datasets::ActivationWriter writer(dir, header, 1024);
  torch::manual_seed(3);
  const torch::Tensor w = torch::randn({32, 32}) / std::sqrt(32.0);
  torch::manual_seed(split == "train" ? 4 : 5);
  const torch::Tensor x = torch::randn({rows, 32});
  const absl::Status appended = writer.Append(x, torch::tanh(x.matmul(w)));
  EXPECT_TRUE(appended.ok()) << appended;
  const auto finished = writer.Finish();
  EXPECT_TRUE(finished.ok()) << finished.status();
  return dir + "/" + split + ".activations.textproto";
}

// The fitting objective through the one loop: only the replacement layer
// trains, the rest of the checkpoint is the parent's, the fit reduces its
// validation NMSE, reruns are bit-identical, and a cache of another block is
// refused.
TEST(TrainerTest, FitTrainsOnlyTheReplacementLayerOnItsCache) {
  config::ExperimentConfig parent = TinyConfig();
  parent.mutable_budget()->set_max_steps(4);
  parent.mutable_eval()->set_sample_tokens(0);
  ASSERT_TRUE(
      Train(parent, Options("fit_parent"), MakeNextTokenObjective).ok());
  const std::string parent_path = Options("fit_parent").checkpoint_path;

  config::ExperimentConfig fit = parent;
  auto* replacement = fit.mutable_model()->mutable_replacement();
  replacement->set_ffn("transcoder");
  replacement->set_layer(0);
  replacement->set_d_ffn(128);
  replacement->set_top_k(8);
  fit.mutable_data()->set_batch_size(64);
  fit.mutable_optimizer()->set_gradient_clip_norm(0);
  fit.mutable_optimizer()->set_weight_decay(0);
  fit.mutable_budget()->set_max_steps(40);
  fit.mutable_eval()->set_every_steps(10);
  TrainerOptions options = Options("fit");
  options.init_from = parent_path;
  options.train_activations = WriteFfnCache(parent_path, "train", 4096);
  options.validation_activations =
      WriteFfnCache(parent_path, "validation", 512);
  auto summary = Train(fit, options, MakeReplacementObjective);
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->objective(), "normalised_mse");
  EXPECT_EQ(summary->tokens(), 40 * 64);  // Rows.
  EXPECT_GT(summary->l0(), 0);
  EXPECT_LE(summary->l0(), 8);

  const std::string log = *ReadFileToString(options.log_csv_path);
  EXPECT_EQ(log.substr(0, log.find('\n')),
            "step,rows,learning_rate,train_nmse,grad_norm,validation_nmse");
  // The validation NMSE after 10 steps, then after 40.
  const size_t row_10 = log.find("\n10,");
  ASSERT_NE(row_10, std::string::npos) << log;
  const std::string line_10 =
      log.substr(row_10 + 1, log.find('\n', row_10 + 1) - row_10 - 1);
  const double nmse_10 = std::stod(line_10.substr(line_10.rfind(',') + 1));
  EXPECT_LT(summary->validation_loss(), 0.9 * nmse_10) << log;

  auto base =
      layers::GptImpl::Create(*layers::GptOptionsFromConfig(parent.model()));
  ASSERT_TRUE(layers::LoadCheckpoint(parent_path, **base, nullptr).ok());
  auto fitted =
      layers::GptImpl::Create(*layers::GptOptionsFromConfig(fit.model()));
  ASSERT_TRUE(
      layers::LoadCheckpoint(options.checkpoint_path, **fitted, nullptr).ok());
  const auto base_parameters = (*base)->named_parameters();
  int64_t shared = 0;
  for (const auto& item : (*fitted)->named_parameters()) {
    const torch::Tensor* original = base_parameters.find(item.key());
    if (original == nullptr) continue;
    ++shared;
    EXPECT_TRUE(torch::equal(*original, item.value())) << item.key();
  }
  EXPECT_GT(shared, 10);
  int64_t layer_parameters = 0;
  for (const torch::Tensor& p : (*fitted)->ReplacementLayer()->parameters()) {
    layer_parameters += p.numel();
  }
  EXPECT_EQ(summary->parameters(), layer_parameters);

  TrainerOptions again = options;
  again.checkpoint_path += ".again";
  again.log_csv_path += ".again";
  again.summary_path += ".again";
  auto rerun = Train(fit, again, MakeReplacementObjective);
  ASSERT_TRUE(rerun.ok()) << rerun.status();
  EXPECT_EQ(rerun->checkpoint_sha256(), summary->checkpoint_sha256());

  replacement->set_layer(1);
  auto wrong_block = Train(fit, again, MakeReplacementObjective);
  ASSERT_FALSE(wrong_block.ok());
  EXPECT_NE(wrong_block.status().message().find("caches block 0"),
            std::string::npos)
      << wrong_block.status();
}

// Lorsa's QK initialisations (arXiv:2504.20938 App. B.3, Table 3): the frozen
// copy ends with the base attention's W_Q, W_K (so the copy and the input
// scale folded back are right) while its OV side trains; the trainable copy
// moves off it; the random start never had it.
TEST(TrainerTest, LorsaQkInitCopiesTheBaseAttentionAndFreezesOnRequest) {
  config::ExperimentConfig parent = TinyConfig();
  parent.mutable_budget()->set_max_steps(4);
  parent.mutable_eval()->set_sample_tokens(0);
  ASSERT_TRUE(Train(parent, Options("qk_parent"), MakeNextTokenObjective).ok());
  const std::string parent_path = Options("qk_parent").checkpoint_path;
  auto base =
      layers::GptImpl::Create(*layers::GptOptionsFromConfig(parent.model()));
  ASSERT_TRUE(layers::LoadCheckpoint(parent_path, **base, nullptr).ok());
  const auto* attention = dynamic_cast<const layers::CausalSelfAttentionImpl*>(
      (*base)->blocks[0]->attention.get());
  ASSERT_NE(attention, nullptr);
  // Head h's W_Q (d, d_head) from the fused qkv rows; 2 heads of width 16.
  const torch::Tensor qkv = attention->qkv->weight;
  auto head_q = [&](int64_t h) {
    return qkv.slice(0, 16 * h, 16 * h + 16).t();
  };

  for (const auto init : {config::FfnReplacement::QK_RANDOM,
                          config::FfnReplacement::QK_FROM_ATTENTION,
                          config::FfnReplacement::QK_FROM_ATTENTION_FROZEN}) {
    const std::string name = config::FfnReplacement::QkInit_Name(init);
    config::ExperimentConfig fit = parent;
    auto* replacement = fit.mutable_model()->mutable_replacement();
    replacement->set_ffn("lorsa");
    replacement->set_site(config::FfnReplacement::ATTN);
    replacement->set_layer(0);
    replacement->set_d_ffn(32);
    replacement->set_qk_heads(4);  // Two QK heads per attention head.
    replacement->set_top_k(4);
    replacement->set_qk_init(init);
    fit.mutable_data()->set_batch_size(4);
    fit.mutable_optimizer()->set_weight_decay(0);
    fit.mutable_budget()->set_max_steps(6);
    fit.mutable_eval()->set_every_steps(6);
    TrainerOptions options = Options("qk_" + name);
    options.init_from = parent_path;
    options.train_activations =
        WriteFfnCache(parent_path, "train", 2048, "attn");
    options.validation_activations =
        WriteFfnCache(parent_path, "validation", 512, "attn");
    auto summary = Train(fit, options, MakeReplacementObjective);
    ASSERT_TRUE(summary.ok()) << name << ": " << summary.status();
    auto fitted =
        layers::GptImpl::Create(*layers::GptOptionsFromConfig(fit.model()));
    ASSERT_TRUE(
        layers::LoadCheckpoint(options.checkpoint_path, **fitted, nullptr)
            .ok());
    const layers::Lorsa lorsa = (*fitted)->LorsaReplacement();
    ASSERT_TRUE(lorsa);
    for (int64_t group = 0; group < 4; ++group) {
      const bool copied =
          torch::allclose(lorsa->w_q[group], head_q(group / 2), 1e-4, 1e-6);
      EXPECT_EQ(copied,
                init == config::FfnReplacement::QK_FROM_ATTENTION_FROZEN)
          << name << " group " << group;
    }
    // Every strategy trains the OV side.
    EXPECT_GT(summary->parameters(), 0) << name;
  }
}

// Each binary's objective refuses the other's inputs with one line naming the
// binary to run (train_main.cc trains LMs, fit_main.cc fits replacements).
TEST(TrainerTest, EachObjectiveRefusesTheOthersInputs) {
  config::ExperimentConfig config = TinyConfig();
  TrainerOptions lm_with_cache = Options("lm_with_cache");
  lm_with_cache.train_activations = "rows.activations.textproto";
  auto lm = Train(config, lm_with_cache, MakeNextTokenObjective);
  ASSERT_FALSE(lm.ok());
  EXPECT_NE(lm.status().message().find("//pipelines/train:fit"),
            std::string::npos)
      << lm.status();
  auto fit =
      Train(config, Options("fit_without_cache"), MakeReplacementObjective);
  ASSERT_FALSE(fit.ok());
  EXPECT_NE(fit.status().message().find("--train_activations"),
            std::string::npos)
      << fit.status();
}

TEST(TrainerTest, NonFiniteLossStopsWithTheStep) {
  config::ExperimentConfig config = TinyConfig();
  config.mutable_optimizer()->set_learning_rate(1e30);
  config.mutable_optimizer()->set_gradient_clip_norm(0);
  config.mutable_schedule()->set_warmup_steps(0);
  auto summary = Train(config, Options("nan"), MakeNextTokenObjective);
  ASSERT_FALSE(summary.ok());
  EXPECT_NE(summary.status().message().find("at step"), std::string::npos)
      << summary.status();
}

}  // namespace
}  // namespace sparse_layers::train
