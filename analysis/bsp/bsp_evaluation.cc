#include "analysis/bsp/bsp_evaluation.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "analysis/bsp/board_tracking.h"
#include "analysis/bsp/feature_classifiers.h"
#include "base/common/status_macros.h"
#include "layers/ffn/mixture_of_experts.h"
#include "models/hook_lookup.h"

namespace sparse_layers::analysis {
namespace {

using datasets::chess::ChessGame;

torch::Tensor Properties(const std::vector<ChessBoard>& boards,
                         bool mask_initial) {
  std::vector<torch::Tensor> rows;
  for (const auto& board : boards) {
    rows.push_back(PieceOnSquareProperties(board, mask_initial));
  }
  return torch::stack(rows);
}

double Pearson(const torch::Tensor& a, const torch::Tensor& b) {
  const torch::Tensor x = a.to(torch::kDouble) - a.to(torch::kDouble).mean();
  const torch::Tensor y = b.to(torch::kDouble) - b.to(torch::kDouble).mean();
  const double denominator = (x.norm() * y.norm()).item<double>();
  return denominator > 0 ? (x * y).sum().item<double>() / denominator
                         : std::nan("");
}

// Router score against each expert's true l0 (MoE-X Fig. 9): over (token,
// expert) pairs, over experts' means, and how often the top-k scores pick the
// k sparsest experts. NaN for a model whose block is not a mixture.
struct RouterAgreement {
  double pairs_r = std::nan("");
  double experts_r = std::nan("");
  double sparsest_k_agreement = std::nan("");
};

RouterAgreement MeasureRouterAgreement(
    layers::FeedForwardImpl& ffn, const std::vector<torch::Tensor>& inputs) {
  RouterAgreement agreement;
  auto* mixture = dynamic_cast<layers::MixtureOfExpertsImpl*>(&ffn);
  if (mixture == nullptr) return agreement;
  torch::NoGradGuard no_grad;
  const torch::Tensor x = torch::cat(inputs);
  const torch::Tensor true_l0 =
      (mixture->AllPreActivations(x) > 0).sum(-1).to(torch::kFloat);
  const torch::Tensor scores = mixture->Route(x).scores;  // (N, M)
  agreement.pairs_r = Pearson(scores.flatten(), true_l0.flatten());
  agreement.experts_r = Pearson(scores.mean(0), true_l0.mean(0));
  const int64_t k = mixture->options().top_k;
  const torch::Tensor chosen =
      std::get<0>(std::get<1>(scores.topk(k, -1)).sort(-1));
  const torch::Tensor sparsest =
      std::get<0>(std::get<1>((-true_l0).topk(k, -1)).sort(-1));
  agreement.sparsest_k_agreement =
      (chosen == sparsest).all(-1).to(torch::kDouble).mean().item<double>();
  return agreement;
}

std::string CoverageTable(layers::GptImpl& model, uint64_t seed,
                          const BspFeatures& train, const BspFeatures& test,
                          const BspEvaluationOptions& options) {
  std::string csv =
      "model,ffn,layer,bsp_set,coverage_code,coverage_paper,"
      "reconstruction_code,reconstruction_paper,best_t_coverage,"
      "best_t_reconstruction,live_features,features,routed_features,"
      "l0_per_token,"
      "router_l0_pearson_pairs,router_l0_pearson_experts,"
      "sparsest_k_agreement,headline_block,seed,training_percent\n";
  const std::vector<double> thresholds = DefaultThresholds();
  const int headline = HeadlineBlock(static_cast<int>(model.blocks.size()));
  const int sae_block = OutputSaeBlock(model);
  // The boards' properties are the same for every block: built once per set.
  std::vector<std::pair<torch::Tensor, torch::Tensor>> properties;
  for (const bool mask_initial : {false, true}) {
    properties.emplace_back(Properties(train.boards, mask_initial),
                            Properties(test.boards, mask_initial));
  }
  for (size_t l = 0; l < model.blocks.size(); ++l) {
    // An SAE's rows are its block's alone: the other blocks are the base's.
    if (sae_block >= 0 && static_cast<int>(l) != sae_block) continue;
    const std::string features_of =
        sae_block >= 0 ? model.options().replacement.ffn : model.options().ffn;
    const torch::Tensor train_features = torch::cat(train.at_dots[l]);
    const torch::Tensor test_features = torch::cat(test.at_dots[l]);
    const torch::Tensor all_positions = torch::cat(train.everywhere[l]);
    const torch::Tensor maxima = FeatureMaxima(all_positions);
    const double l0 =
        (all_positions != 0).sum(1).to(torch::kDouble).mean().item<double>();
    // Units a token's router can reach: the k routed experts' of a mixture,
    // every unit otherwise (MoE-X Fig. 5 matches mixtures to dense models by
    // this active width).
    auto* mixture =
        dynamic_cast<layers::MixtureOfExpertsImpl*>(model.blocks[l]->ffn.get());
    const int64_t routed = sae_block < 0 && mixture != nullptr
                               ? maxima.numel() / mixture->options().n_experts *
                                     mixture->options().top_k
                               : maxima.numel();
    const RouterAgreement router =
        sae_block >= 0 ? RouterAgreement{}
                       : MeasureRouterAgreement(*model.blocks[l]->ffn,
                                                train.ffn_inputs[l]);
    for (const bool mask_initial : {false, true}) {
      const auto& [train_properties, test_properties] =
          properties[mask_initial ? 1 : 0];
      const CoverageResult coverage =
          Coverage(train_features, maxima, train_properties, thresholds);
      const ReconstructionResult reconstruction =
          Reconstruction(train_features, train_properties, test_features,
                         test_properties, maxima, thresholds, LabellingRule());
      absl::StrAppend(
          &csv,
          absl::StrFormat(
              "%s,%s,%d,%s,%.6f,%.6f,%.6f,%.6f,%.1f,%.1f,%d,%d,%d,%.3f,%.4f,"
              "%.4f,"
              "%.4f,%d,%d,%d\n",
              options.model_name, features_of, l,
              mask_initial ? "masked_blank_and_initial" : "masked_blank",
              coverage.coverage_code, coverage.coverage_paper,
              reconstruction.reconstruction_code,
              reconstruction.reconstruction_paper,
              thresholds[coverage.best_threshold_code],
              thresholds[reconstruction.best_threshold_code],
              coverage.live_features, maxima.numel(), routed, l0,
              router.pairs_r, router.experts_r, router.sparsest_k_agreement,
              static_cast<int>(l) == headline ? 1 : 0, seed,
              options.training_percent));
    }
  }
  return csv;
}

absl::StatusOr<std::string> BoardTrackingTable(
    layers::GptImpl& model, uint64_t seed, const std::vector<ChessGame>& games,
    const BspEvaluationOptions& options) {
  const NextTokenLogProbs log_probs = [&model](const torch::Tensor& t) {
    return torch::log_softmax(model.forward(t), -1);
  };
  BoardTrackingOptions tracking;
  tracking.characters = options.characters;
  tracking.sampling_seed = seed;
  const std::vector<ChessGame> read(
      games.begin(),
      games.begin() +
          std::min<size_t>(games.size(), options.board_tracking_games));
  const absl::Time start = absl::Now();
  ASSIGN_OR_RETURN(const std::vector<BoardTrackingResult> results,
                   EvaluateBoardTracking(read, log_probs, tracking));
  std::fprintf(stderr, "evaluate_bsp: board tracking of %zu games: %.1f s\n",
               read.size(), absl::ToDoubleSeconds(absl::Now() - start));
  std::string csv =
      "model,ffn,policy,games,plies,legal_move_rate_greedy,"
      "legal_move_rate_sampled,characters,loss_nats_per_character,"
      "uniform_legal_floor_nats_per_character,loss_above_floor,seed,"
      "training_percent\n";
  for (const BoardTrackingResult& r : results) {
    absl::StrAppend(
        &csv,
        absl::StrFormat(
            "%s,%s,%s,%d,%d,%.4f,%.4f,%d,%.4f,%.4f,%.4f,%d,%d\n",
            options.model_name, model.options().ffn, r.policy, r.games, r.plies,
            r.legal_move_rate_greedy, r.legal_move_rate_sampled, r.characters,
            r.loss_nats_per_character, r.uniform_legal_floor_nats_per_character,
            r.loss_nats_per_character -
                r.uniform_legal_floor_nats_per_character,
            seed, options.training_percent));
  }
  std::fputs(csv.c_str(), stderr);
  return csv;
}

}  // namespace

int HeadlineBlock(int n_layers) { return (3 * n_layers + 3) / 4 - 1; }

int OutputSaeBlock(const layers::GptImpl& model) {
  const auto& replacement = model.options().replacement;
  return replacement.layer >= 0 && replacement.on_output &&
                 !replacement.attention_site
             ? static_cast<int>(replacement.layer)
             : -1;
}

absl::StatusOr<BspFeatures> CollectBspFeatures(
    layers::GptImpl& model, const std::vector<ChessGame>& games,
    int characters) {
  const int layers = static_cast<int>(model.blocks.size());
  const int sae_block = OutputSaeBlock(model);
  BspFeatures collected;
  collected.at_dots.resize(layers);
  collected.everywhere.resize(layers);
  collected.ffn_inputs.resize(layers);
  torch::NoGradGuard no_grad;
  for (const ChessGame& game : games) {
    const std::string text = game.text().substr(0, characters);
    ASSIGN_OR_RETURN(const std::vector<int> ids,
                     datasets::chess::EncodeGame(text));
    std::vector<std::vector<torch::Tensor>> hidden(layers), inputs(layers);
    for (int l = 0; l < layers; ++l) {
      ASSIGN_OR_RETURN(
          layers::HookPoint* const hidden_hook,
          layers::RequireHook(
              model, absl::StrCat("blocks.", l,
                                  l == sae_block ? ".ffn.sae.hook_codes"
                                                 : ".ffn.hook_hidden")));
      ASSIGN_OR_RETURN(layers::HookPoint* const input_hook,
                       layers::RequireHook(
                           model, absl::StrCat("blocks.", l, ".ffn.hook_in")));
      hidden_hook->Add(layers::CaptureHook(&hidden[l]));
      input_hook->Add(layers::CaptureHook(&inputs[l]));
    }
    const torch::Tensor tokens =
        torch::tensor(std::vector<int64_t>(ids.begin(), ids.end()))
            .unsqueeze(0);
    model.forward(tokens);
    model.ClearHooks();
    const std::vector<int> dots = EvaluatedDots(text);
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
      ASSIGN_OR_RETURN(
          const ChessBoard board,
          ParseFenBoard(game.fens(StateIndexAt(text, dot, game.fens_size()))));
      collected.boards.push_back(board);
    }
  }
  return collected;
}

absl::StatusOr<BspTables> EvaluateBsp(layers::GptImpl& model, uint64_t seed,
                                      const std::vector<ChessGame>& bsp_train,
                                      const std::vector<ChessGame>& bsp_test,
                                      const BspEvaluationOptions& options) {
  const absl::Time start = absl::Now();
  ASSIGN_OR_RETURN(const BspFeatures train,
                   CollectBspFeatures(model, bsp_train, options.characters));
  ASSIGN_OR_RETURN(const BspFeatures test,
                   CollectBspFeatures(model, bsp_test, options.characters));
  BspTables tables;
  tables.coverage = CoverageTable(model, seed, train, test, options);
  std::fputs(tables.coverage.c_str(), stderr);
  std::fprintf(stderr, "evaluate_bsp: coverage and reconstruction: %.1f s\n",
               absl::ToDoubleSeconds(absl::Now() - start));
  if (options.board_tracking) {
    ASSIGN_OR_RETURN(tables.board_tracking,
                     BoardTrackingTable(model, seed, bsp_test, options));
  }
  return tables;
}

}  // namespace sparse_layers::analysis
