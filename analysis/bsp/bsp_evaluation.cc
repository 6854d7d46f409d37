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
#include "layers/ffn/sgatlin.h"
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

// A product-key layer's hidden code is its C*k selected neurons per token;
// scattered into its whole pool (summed where several heads pick one neuron)
// it is PEER's feature vector g_{h,i} sigma(u_i . x) in R^N (MoE-X Table 1's
// PEER row; He 2024). sgatlin's channels own separate pools of d_ffn neurons.
torch::Tensor ScatteredProductKeyCode(const layers::ProductKeyFfnImpl& ffn,
                                      const torch::Tensor& hidden,
                                      const torch::Tensor& indices) {
  const auto& options = ffn.options();
  const int64_t tokens = hidden.size(0), c = options.channels;
  torch::Tensor rows = indices.reshape({tokens, c, -1});
  if (!options.peer) {
    rows =
        rows + torch::arange(c, rows.options()).view({1, c, 1}) * options.d_ffn;
  }
  return torch::zeros({tokens, ffn.experts_in.size(0)}, hidden.options())
      .scatter_add_(1, rows.reshape({tokens, -1}), hidden);
}

// A block's FFN as the routed kinds whose code needs more than its hidden
// hook; both null for a dense FFN and at an output SAE's block (its latents
// are the code there).
struct RoutedFfn {
  layers::MixtureOfExpertsImpl* mixture = nullptr;
  layers::ProductKeyFfnImpl* product_key = nullptr;
};

RoutedFfn RoutedFfnOf(layers::GptImpl& model, int block) {
  if (block == OutputSaeBlock(model)) return {};
  layers::FeedForwardImpl* ffn = model.blocks[block]->ffn.get();
  return {dynamic_cast<layers::MixtureOfExpertsImpl*>(ffn),
          dynamic_cast<layers::ProductKeyFfnImpl*>(ffn)};
}

// Router score against each expert's true l0 (MoE-X Fig. 9): over (token,
// expert) pairs, over experts' means, and how often the top-k scores pick the
// k sparsest experts. NaN for a model whose block is not a mixture.
struct RouterAgreement {
  double pairs_r = std::nan("");
  double experts_r = std::nan("");
  double sparsest_k_agreement = std::nan("");
};

RouterAgreement MeasureRouterAgreement(const std::vector<torch::Tensor>& scores,
                                       const std::vector<torch::Tensor>& l0,
                                       int64_t k) {
  RouterAgreement agreement;
  if (scores.empty()) return agreement;
  const torch::Tensor router = torch::cat(scores);  // (N, M)
  const torch::Tensor true_l0 = torch::cat(l0);     // (N, M)
  agreement.pairs_r = Pearson(router.flatten(), true_l0.flatten());
  agreement.experts_r = Pearson(router.mean(0), true_l0.mean(0));
  const torch::Tensor chosen =
      std::get<0>(std::get<1>(router.topk(k, -1)).sort(-1));
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
    const torch::Tensor& maxima = train.maxima[l];
    const double l0 = train.active_units[l] / train.positions;
    // Units a token's router can reach: the k routed experts' of a mixture,
    // a product-key layer's C heads x k neurons, every unit otherwise (MoE-X
    // Fig. 5 matches mixtures to dense models by this active width).
    const RoutedFfn ffn = RoutedFfnOf(model, static_cast<int>(l));
    int64_t routed = maxima.numel();
    RouterAgreement router;
    if (ffn.mixture != nullptr) {
      const auto& mixture = ffn.mixture->options();
      routed = maxima.numel() / mixture.n_experts * mixture.top_k;
      router = MeasureRouterAgreement(train.router_scores[l],
                                      train.expert_l0[l], mixture.top_k);
    } else if (ffn.product_key != nullptr) {
      routed = ffn.product_key->options().channels *
               ffn.product_key->options().top_k;
    }
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

std::string RouterExpertsTable(const layers::GptImpl& model, uint64_t seed,
                               const BspFeatures& train,
                               const BspEvaluationOptions& options) {
  std::string csv =
      "model,ffn,layer,expert,mean_active_units,mean_router_score,"
      "headline_block,seed,training_percent\n";
  const int headline = HeadlineBlock(static_cast<int>(model.blocks.size()));
  for (size_t l = 0; l < train.router_scores.size(); ++l) {
    if (train.router_scores[l].empty()) continue;
    const torch::Tensor scores =
        torch::cat(train.router_scores[l]).to(torch::kDouble).mean(0);
    const torch::Tensor l0 =
        torch::cat(train.expert_l0[l]).to(torch::kDouble).mean(0);
    for (int64_t m = 0; m < scores.size(0); ++m) {
      absl::StrAppend(
          &csv, absl::StrFormat("%s,%s,%d,%d,%.4f,%.6f,%d,%d,%d\n",
                                options.model_name, model.options().ffn, l, m,
                                l0[m].item<double>(), scores[m].item<double>(),
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
  std::vector<int> read;
  std::vector<RoutedFfn> routed(layers);
  for (int l = 0; l < layers; ++l) {
    if (sae_block < 0 || l == sae_block) read.push_back(l);
    routed[l] = RoutedFfnOf(model, l);
  }
  BspFeatures collected;
  collected.at_dots.resize(layers);
  collected.maxima.resize(layers);
  collected.active_units.assign(layers, 0.0);
  collected.router_scores.resize(layers);
  collected.expert_l0.resize(layers);
  torch::NoGradGuard no_grad;
  for (const ChessGame& game : games) {
    const std::string text = game.text().substr(0, characters);
    ASSIGN_OR_RETURN(const std::vector<int> ids,
                     datasets::chess::EncodeGame(text));
    std::vector<std::vector<torch::Tensor>> hidden(layers), inputs(layers),
        indices(layers);
    for (int l : read) {
      ASSIGN_OR_RETURN(
          layers::HookPoint* const hidden_hook,
          layers::RequireHook(
              model, absl::StrCat("blocks.", l,
                                  l == sae_block ? ".ffn.sae.hook_codes"
                                                 : ".ffn.hook_hidden")));
      hidden_hook->Add(layers::CaptureHook(&hidden[l]));
      if (routed[l].mixture != nullptr) {
        ASSIGN_OR_RETURN(
            layers::HookPoint* const input_hook,
            layers::RequireHook(model,
                                absl::StrCat("blocks.", l, ".ffn.hook_in")));
        input_hook->Add(layers::CaptureHook(&inputs[l]));
      }
      if (routed[l].product_key != nullptr) {
        ASSIGN_OR_RETURN(
            layers::HookPoint* const indices_hook,
            layers::RequireHook(
                model, absl::StrCat("blocks.", l, ".ffn.hook_router_indices")));
        indices_hook->Add(layers::CaptureHook(&indices[l]));
      }
    }
    const torch::Tensor tokens =
        torch::tensor(std::vector<int64_t>(ids.begin(), ids.end()))
            .unsqueeze(0);
    model.forward(tokens);
    model.ClearHooks();
    const std::vector<int> dots = EvaluatedDots(text);
    const torch::Tensor dot_index =
        torch::tensor(std::vector<int64_t>(dots.begin(), dots.end()));
    for (int l : read) {
      torch::Tensor h = hidden[l].at(0).reshape({-1, hidden[l][0].size(-1)});
      if (routed[l].product_key != nullptr) {
        h = ScatteredProductKeyCode(*routed[l].product_key, h,
                                    indices[l].at(0));
      }
      collected.at_dots[l].push_back(h.index_select(0, dot_index));
      const torch::Tensor maxima = FeatureMaxima(h);
      collected.maxima[l] = collected.maxima[l].defined()
                                ? torch::maximum(collected.maxima[l], maxima)
                                : maxima;
      collected.active_units[l] += (h != 0).sum().item<double>();
      if (layers::MixtureOfExpertsImpl* mixture = routed[l].mixture) {
        const torch::Tensor x =
            inputs[l].at(0).reshape({-1, inputs[l][0].size(-1)});
        collected.router_scores[l].push_back(mixture->Route(x).scores);
        collected.expert_l0[l].push_back(
            (mixture->AllPreActivations(x) > 0).sum(-1).to(torch::kFloat));
      }
    }
    collected.positions += static_cast<int64_t>(text.size());
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
  tables.router_experts = RouterExpertsTable(model, seed, train, options);
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
