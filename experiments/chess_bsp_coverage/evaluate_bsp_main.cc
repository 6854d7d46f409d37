// Evaluates one chess model's FFN hidden units as board-state-property
// classifiers (MoE-X arXiv:2503.07639 Sec. 3.1, App. B): for every layer,
// coverage and board reconstruction in the paper's and the evaluation code's
// variants, on the masked-blank and masked-blank-and-initial BSP sets; l0 of
// the hidden code; for mixtures, the correlation of the router score with each
// expert's true l0 (Fig. 9). Without --checkpoint the model is the randomly
// initialised control. Every row carries the config's runtime.seed (`seed`,
// the claims engine's seed column) and whether its block is the paper's
// reading depth (`headline_block`). With --board_tracking_out, also whether
// the model tracks the board at all (analysis/bsp/board_tracking.h): its
// legal-move rate and its loss against the uniform-legal-move floor on the
// BSP-test games, one row per game policy.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "analysis/bsp/board_tracking.h"
#include "analysis/bsp/chess_board.h"
#include "analysis/bsp/feature_classifiers.h"
#include "datasets/chess/chess_games.h"
#include "layers/backend/torch_init.h"
#include "layers/backend/torch_runtime.h"
#include "layers/ffn/mixture_of_experts.h"
#include "layers/models/gpt.h"
#include "layers/models/model_loader.h"
#include "tools/common/cpu_slots.h"
#include "tools/common/file_io.h"
#include "tools/common/staged_outputs.h"
#include "tools/config/config_loader.h"

ABSL_FLAG(std::string, checkpoint, "", "Trained model (lm_checkpoint .pt).");
ABSL_FLAG(std::string, config, "",
          "Config of a randomly initialised control (no --checkpoint).");
ABSL_FLAG(std::string, name, "", "Model name written in every row.");
ABSL_FLAG(std::string, bsp_train, "", "BSP-train games (JSONL).");
ABSL_FLAG(std::string, bsp_test, "", "BSP-test games (JSONL).");
ABSL_FLAG(int, characters, 256,
          "Characters of each game run through the model.");
ABSL_FLAG(std::string, out, "", "Output CSV, one row per (layer, BSP set).");
ABSL_FLAG(std::string, board_tracking_out, "",
          "Optional CSV of board tracking on the BSP-test games, one row per "
          "game policy (all, random, engine).");
ABSL_FLAG(int, board_tracking_games, 50,
          "BSP-test games read for board tracking (the first ones).");

namespace sparse_layers::experiments {
namespace {

using datasets::chess::ChessGame;

struct Collected {
  // Per layer: features at the evaluated '.' positions, and at every position.
  std::vector<std::vector<torch::Tensor>> at_dots, everywhere, ffn_inputs;
  std::vector<analysis::ChessBoard> boards;
};

absl::StatusOr<Collected> Collect(layers::GptImpl& model,
                                  const std::vector<ChessGame>& games,
                                  int characters) {
  const int layers = static_cast<int>(model.blocks.size());
  Collected collected;
  collected.at_dots.resize(layers);
  collected.everywhere.resize(layers);
  collected.ffn_inputs.resize(layers);
  torch::NoGradGuard no_grad;
  for (const ChessGame& game : games) {
    const std::string text = game.text().substr(0, characters);
    auto ids = datasets::chess::EncodeGame(text);
    if (!ids.ok()) return ids.status();
    std::vector<std::vector<torch::Tensor>> hidden(layers), inputs(layers);
    for (int l = 0; l < layers; ++l) {
      model.FindHook(absl::StrCat("blocks.", l, ".ffn.hook_hidden"))
          ->Add(layers::CaptureHook(&hidden[l]));
      model.FindHook(absl::StrCat("blocks.", l, ".ffn.hook_in"))
          ->Add(layers::CaptureHook(&inputs[l]));
    }
    const torch::Tensor tokens =
        torch::tensor(std::vector<int64_t>(ids->begin(), ids->end()))
            .unsqueeze(0);
    model.forward(tokens);
    model.ClearHooks();
    const std::vector<int> dots = analysis::EvaluatedDots(text);
    const torch::Tensor dot_index =
        torch::tensor(std::vector<int64_t>(dots.begin(), dots.end()));
    for (int l = 0; l < layers; ++l) {
      const torch::Tensor h =
          hidden[l].at(0).reshape({-1, hidden[l][0].size(-1)});
      collected.at_dots[l].push_back(h.index_select(0, dot_index));
      collected.everywhere[l].push_back(h);
      collected.ffn_inputs[l].push_back(
          inputs[l].at(0).reshape({-1, inputs[l][0].size(-1)}));
    }
    for (int dot : dots) {
      auto board = analysis::ParseFenBoard(
          game.fens(analysis::StateIndexAt(text, dot, game.fens_size())));
      if (!board.ok()) return board.status();
      collected.boards.push_back(*board);
    }
  }
  return collected;
}

torch::Tensor Properties(const std::vector<analysis::ChessBoard>& boards,
                         bool mask_initial) {
  std::vector<torch::Tensor> rows;
  for (const auto& board : boards) {
    rows.push_back(analysis::PieceOnSquareProperties(board, mask_initial));
  }
  return torch::stack(rows);
}

// The block the paper reads, as the same share of the depth: layer 6 of 8
// (MoE-X Sec. 3.1; App. A Fig. 11), 0-indexed; block 2 of a 4-block model.
int HeadlineBlock(int n_layers) { return (3 * n_layers + 3) / 4 - 1; }

double Pearson(const torch::Tensor& a, const torch::Tensor& b) {
  const torch::Tensor x = a.to(torch::kDouble) - a.to(torch::kDouble).mean();
  const torch::Tensor y = b.to(torch::kDouble) - b.to(torch::kDouble).mean();
  const double denominator = (x.norm() * y.norm()).item<double>();
  return denominator > 0 ? (x * y).sum().item<double>() / denominator
                         : std::nan("");
}

// The board-tracking CSV: one row per game policy, with the model's seed.
absl::Status WriteBoardTracking(layers::GptImpl& model,
                                const std::vector<ChessGame>& games,
                                uint64_t seed, StagedOutputs& outputs) {
  const analysis::NextTokenLogProbs log_probs =
      [&model](const torch::Tensor& t) {
        return torch::log_softmax(model.forward(t), -1);
      };
  analysis::BoardTrackingOptions options;
  options.characters = absl::GetFlag(FLAGS_characters);
  options.sampling_seed = seed;
  const std::vector<ChessGame> read(
      games.begin(),
      games.begin() +
          std::min<size_t>(games.size(),
                           absl::GetFlag(FLAGS_board_tracking_games)));
  const absl::Time start = absl::Now();
  auto results = analysis::EvaluateBoardTracking(read, log_probs, options);
  if (!results.ok()) return results.status();
  std::fprintf(stderr, "evaluate_bsp: board tracking of %zu games: %.1f s\n",
               read.size(), absl::ToDoubleSeconds(absl::Now() - start));
  std::string csv =
      "model,ffn,policy,games,plies,legal_move_rate_greedy,"
      "legal_move_rate_sampled,characters,loss_nats_per_character,"
      "uniform_legal_floor_nats_per_character,loss_above_floor,seed\n";
  for (const analysis::BoardTrackingResult& r : *results) {
    absl::StrAppend(
        &csv,
        absl::StrFormat("%s,%s,%s,%d,%d,%.4f,%.4f,%d,%.4f,%.4f,%.4f,%d\n",
                        absl::GetFlag(FLAGS_name), model.options().ffn,
                        r.policy, r.games, r.plies, r.legal_move_rate_greedy,
                        r.legal_move_rate_sampled, r.characters,
                        r.loss_nats_per_character,
                        r.uniform_legal_floor_nats_per_character,
                        r.loss_nats_per_character -
                            r.uniform_legal_floor_nats_per_character,
                        seed));
  }
  std::fputs(csv.c_str(), stderr);
  return outputs.WriteFile(absl::GetFlag(FLAGS_board_tracking_out), csv);
}

absl::Status Run() {
  if (absl::Status s = FirstError(
          {FlagFilesExist(FLAGS_checkpoint), FlagFilesExist(FLAGS_config),
           RequiredFile(FLAGS_bsp_train), RequiredFile(FLAGS_bsp_test),
           RequiredFlag(FLAGS_out), FlagAtLeast(FLAGS_characters, 1),
           FlagAtLeast(FLAGS_board_tracking_games, 1)});
      !s.ok()) {
    return s;
  }
  if (absl::GetFlag(FLAGS_checkpoint).empty() ==
      absl::GetFlag(FLAGS_config).empty()) {
    return absl::InvalidArgumentError(
        "give one of --checkpoint (a trained model) and --config (its "
        "randomly initialised control)");
  }
  // Evaluation is as heavy as training: share the cores through the slots.
  if (absl::Status s = AcquireCpuSlotIfRequested(absl::GetFlag(FLAGS_threads));
      !s.ok()) {
    return s;
  }
  std::shared_ptr<layers::GptImpl> model;
  uint64_t seed = 0;
  if (const std::string checkpoint = absl::GetFlag(FLAGS_checkpoint);
      !checkpoint.empty()) {
    auto loaded = layers::LoadModel(checkpoint);
    if (!loaded.ok()) return loaded.status();
    model = loaded->model;
    seed = loaded->config.runtime().seed();
  } else {  // A random initialisation of the config's model (the controls).
    auto config = config::LoadExperimentConfig({absl::GetFlag(FLAGS_config)});
    if (!config.ok()) return config.status();
    seed = config->runtime().seed();
    torch::manual_seed(seed);
    auto options = layers::GptOptionsFromConfig(config->model());
    if (!options.ok()) return options.status();
    auto created = layers::GptImpl::Create(*options);
    if (!created.ok()) return created.status();
    model = *created;
  }
  model->eval();

  std::vector<std::vector<ChessGame>> splits;
  for (const std::string& path :
       {absl::GetFlag(FLAGS_bsp_train), absl::GetFlag(FLAGS_bsp_test)}) {
    auto jsonl = ReadFileToString(path);
    if (!jsonl.ok()) return jsonl.status();
    auto games = datasets::chess::ParseGamesJsonl(*jsonl);
    if (!games.ok()) return games.status();
    splits.push_back(*std::move(games));
  }
  const absl::Time start = absl::Now();
  const int characters = absl::GetFlag(FLAGS_characters);
  auto train = Collect(*model, splits[0], characters);
  if (!train.ok()) return train.status();
  auto test = Collect(*model, splits[1], characters);
  if (!test.ok()) return test.status();

  std::string csv =
      "model,ffn,layer,bsp_set,coverage_code,coverage_paper,"
      "reconstruction_code,reconstruction_paper,best_t_coverage,"
      "best_t_reconstruction,live_features,features,l0_per_token,"
      "router_l0_pearson_pairs,router_l0_pearson_experts,"
      "sparsest_k_agreement,headline_block,seed\n";
  const std::vector<double> thresholds = analysis::DefaultThresholds();
  const int headline = HeadlineBlock(static_cast<int>(model->blocks.size()));
  // The boards' properties are the same for every layer: built once per set.
  std::vector<std::pair<torch::Tensor, torch::Tensor>> properties;
  for (const bool mask_initial : {false, true}) {
    properties.emplace_back(Properties(train->boards, mask_initial),
                            Properties(test->boards, mask_initial));
  }
  for (size_t l = 0; l < model->blocks.size(); ++l) {
    const torch::Tensor train_features = torch::cat(train->at_dots[l]);
    const torch::Tensor test_features = torch::cat(test->at_dots[l]);
    const torch::Tensor all_positions = torch::cat(train->everywhere[l]);
    const torch::Tensor maxima = analysis::FeatureMaxima(all_positions);
    const double l0 =
        (all_positions != 0).sum(1).to(torch::kDouble).mean().item<double>();
    // Router score vs each expert's true l0 (Fig. 9), mixtures only.
    double pairs_r = std::nan(""), experts_r = std::nan(""),
           agreement = std::nan("");
    auto mixture = std::dynamic_pointer_cast<layers::MixtureOfExpertsImpl>(
        model->blocks[l]->ffn);
    if (mixture) {
      torch::NoGradGuard no_grad;
      const torch::Tensor x = torch::cat(train->ffn_inputs[l]);
      const torch::Tensor true_l0 =
          (mixture->AllPreActivations(x) > 0).sum(-1).to(torch::kFloat);
      const torch::Tensor scores = mixture->Route(x).scores;  // (N, M)
      pairs_r = Pearson(scores.flatten(), true_l0.flatten());
      experts_r = Pearson(scores.mean(0), true_l0.mean(0));
      const int64_t k = mixture->options().top_k;
      const torch::Tensor chosen =
          std::get<0>(std::get<1>(scores.topk(k, -1)).sort(-1));
      const torch::Tensor sparsest =
          std::get<0>(std::get<1>((-true_l0).topk(k, -1)).sort(-1));
      agreement =
          (chosen == sparsest).all(-1).to(torch::kDouble).mean().item<double>();
    }
    for (const bool mask_initial : {false, true}) {
      const auto& [train_properties, test_properties] =
          properties[mask_initial ? 1 : 0];
      const analysis::CoverageResult coverage = analysis::Coverage(
          train_features, maxima, train_properties, thresholds);
      const analysis::ReconstructionResult reconstruction =
          analysis::Reconstruction(train_features, train_properties,
                                   test_features, test_properties, maxima,
                                   thresholds, analysis::LabellingRule());
      absl::StrAppend(
          &csv,
          absl::StrFormat(
              "%s,%s,%d,%s,%.6f,%.6f,%.6f,%.6f,%.1f,%.1f,%d,%d,%.3f,%.4f,%.4f,"
              "%.4f,%d,%d\n",
              absl::GetFlag(FLAGS_name), model->options().ffn, l,
              mask_initial ? "masked_blank_and_initial" : "masked_blank",
              coverage.coverage_code, coverage.coverage_paper,
              reconstruction.reconstruction_code,
              reconstruction.reconstruction_paper,
              thresholds[coverage.best_threshold_code],
              thresholds[reconstruction.best_threshold_code],
              coverage.live_features, maxima.numel(), l0, pairs_r, experts_r,
              agreement, static_cast<int>(l) == headline ? 1 : 0, seed));
    }
  }
  std::fputs(csv.c_str(), stderr);
  std::fprintf(stderr, "evaluate_bsp: coverage and reconstruction: %.1f s\n",
               absl::ToDoubleSeconds(absl::Now() - start));
  StagedOutputs outputs;  // Both tables or neither.
  if (absl::Status s = outputs.WriteFile(absl::GetFlag(FLAGS_out), csv);
      !s.ok()) {
    return s;
  }
  if (!absl::GetFlag(FLAGS_board_tracking_out).empty()) {
    if (absl::Status s = WriteBoardTracking(*model, splits[1], seed, outputs);
        !s.ok()) {
      return s;
    }
  }
  return outputs.Commit();
}

}  // namespace
}  // namespace sparse_layers::experiments

int main(int argc, char** argv) {
  sparse_layers::InitMain(
      argc, argv, "BSP coverage and reconstruction of one chess model.");
  (void)sparse_layers::backend::SetTorchThreads(2);
  return sparse_layers::RunMain(sparse_layers::experiments::Run);
}
