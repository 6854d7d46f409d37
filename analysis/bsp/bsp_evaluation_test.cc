#include "analysis/bsp/bsp_evaluation.h"

#include <torch/torch.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "analysis/bsp/chess_board.h"
#include "analysis/bsp/feature_classifiers.h"
#include "datasets/chess/chess_games.h"
#include "gtest/gtest.h"
#include "layers/ffn/mixture_of_experts.h"
#include "layers/ffn/sgatlin.h"
#include "layers/replacement/sparse_replacement.h"
#include "models/gpt.h"
#include "models/tiny_gpt.h"

namespace sparse_layers::analysis {
namespace {

using datasets::chess::ChessGame;

// The board part of a FEN (rank 8 first).
std::string FenBoard(const ChessBoard& board) {
  static constexpr char kPieces[] = "kqrbnp.PNBRQK";  // value + 6
  std::string fen;
  for (int rank = 7; rank >= 0; --rank) {
    int empty = 0;
    for (int file = 0; file < 8; ++file) {
      const int value = board[rank * 8 + file];
      if (value == 0) {
        ++empty;
        continue;
      }
      if (empty > 0) absl::StrAppend(&fen, empty);
      empty = 0;
      fen.push_back(kPieces[value + 6]);
    }
    if (empty > 0) absl::StrAppend(&fen, empty);
    if (rank > 0) fen.push_back('/');
  }
  return fen;
}

// The full FEN of a position (side to move, castling, en passant), what the
// board tracking's move generator reads back.
std::string Fen(const ChessPosition& position) {
  std::string castling;
  for (int i = 0; i < 4; ++i) {
    if (position.castling[i]) castling.push_back("KQkq"[i]);
  }
  std::string en_passant = "-";
  if (position.en_passant >= 0) {
    en_passant = {static_cast<char>('a' + position.en_passant % 8),
                  static_cast<char>('1' + position.en_passant / 8)};
  }
  return absl::StrCat(
      FenBoard(position.board), position.white_to_move ? " w " : " b ",
      castling.empty() ? "-" : castling, " ", en_passant, " 0 1");
}

// A game of uniformly random legal moves in the dataset's text form
// (";1.e4 e5 2.Nf3 ...") with the FEN after every ply (index 0: the start).
ChessGame RandomGame(int plies, unsigned seed) {
  std::mt19937 rng(seed);
  auto position = ParsePosition(std::string(datasets::chess::kInitialFen));
  EXPECT_TRUE(position.ok());
  ChessGame game;
  std::string text = ";";
  game.add_fens(Fen(*position));
  for (int ply = 0; ply < plies; ++ply) {
    const std::vector<ChessMove> moves = LegalMoves(*position);
    if (moves.empty()) break;
    const ChessMove move = moves[rng() % moves.size()];
    if (ply % 2 == 0) {
      absl::StrAppend(&text, ply > 0 ? " " : "", ply / 2 + 1, ".");
    } else {
      text += " ";
    }
    text += ToSan(*position, move);
    *position = MakeMove(*position, move);
    game.add_fens(Fen(*position));
  }
  game.set_text(text);
  return game;
}

// `sae_block` >= 0: with a TopK SAE of 24 latents (k = 3) on that block's FFN
// output, as //pipelines/train:fit splices one in.
std::shared_ptr<layers::GptImpl> ChessModel(const std::string& ffn,
                                            int sae_block = -1) {
  torch::manual_seed(0);
  layers::GptOptions options = layers::testing::TinyGptOptions(
      static_cast<int64_t>(datasets::chess::kVocabulary.size()), 16, 4);
  options.context_length = 256;
  options.ffn = ffn;
  if (sae_block >= 0) {
    options.replacement.ffn = "topk_sae";
    options.replacement.layer = sae_block;
    options.replacement.d_ffn = 24;
    options.replacement.top_k = 3;
    options.replacement.on_output = true;
  }
  if (ffn != "gelu_mlp") {
    options.n_experts = 4;  // PEER: heads.
    options.top_k = 2;
    options.d_ffn = ffn == "peer" ? 16 : 8;  // PEER: a pool of 4^2 neurons.
    options.d_key = 8;
  }
  auto model = layers::GptImpl::Create(options);
  EXPECT_TRUE(model.ok()) << model.status();
  (*model)->eval();
  return *model;
}

// Block `block`'s FFN input at every character of `text`, (T, d), from an
// independent forward pass.
torch::Tensor FfnInputs(layers::GptImpl& model, int block,
                        const std::string& text) {
  std::vector<torch::Tensor> ffn_in;
  model.FindHook(absl::StrCat("blocks.", block, ".ffn.hook_in"))
      ->Add(layers::CaptureHook(&ffn_in));
  auto ids = datasets::chess::EncodeGame(text);
  EXPECT_TRUE(ids.ok());
  torch::NoGradGuard no_grad;
  model.forward(torch::tensor(std::vector<int64_t>(ids->begin(), ids->end()))
                    .unsqueeze(0));
  model.ClearHooks();
  return ffn_in.at(0).reshape({-1, ffn_in[0].size(-1)});
}

// What CollectBspFeatures kept of one game's `text` at `block` is `code`
// (T, units), computed independently: its rows at the evaluated dots, its
// per-unit maxima and its count of active units.
void ExpectCollectedCode(const BspFeatures& features, int block,
                         const std::string& text, const torch::Tensor& code) {
  const std::vector<int> dots = EvaluatedDots(text);
  const torch::Tensor at_dots = code.index_select(
      0, torch::tensor(std::vector<int64_t>(dots.begin(), dots.end())));
  ASSERT_EQ(features.at_dots[block][0].sizes(), at_dots.sizes());
  EXPECT_TRUE(torch::allclose(features.at_dots[block][0], at_dots, 1e-5, 1e-6));
  EXPECT_TRUE(
      torch::allclose(features.maxima[block], FeatureMaxima(code), 1e-5, 1e-6));
  EXPECT_EQ(features.active_units[block], (code != 0).sum().item<double>());
}

std::vector<ChessGame> Games(int count, unsigned seed) {
  std::vector<ChessGame> games;
  for (int i = 0; i < count; ++i) games.push_back(RandomGame(40, seed + i));
  return games;
}

// The rows of a CSV as fields, header first.
std::vector<std::vector<std::string>> Rows(const std::string& csv) {
  std::vector<std::vector<std::string>> rows;
  for (absl::string_view line : absl::StrSplit(csv, '\n', absl::SkipEmpty())) {
    rows.push_back(absl::StrSplit(line, ','));
  }
  return rows;
}

double Field(const std::vector<std::vector<std::string>>& rows, size_t row,
             const std::string& column) {
  for (size_t c = 0; c < rows[0].size(); ++c) {
    if (rows[0][c] != column) continue;
    double value = 0;
    EXPECT_TRUE(absl::SimpleAtod(rows[row][c], &value)) << rows[row][c];
    return value;
  }
  ADD_FAILURE() << "no column " << column;
  return std::nan("");
}

// Layer 6 of 8 in the paper, 1-indexed: the same share of any depth.
TEST(HeadlineBlockTest, ThreeQuartersOfTheDepth) {
  EXPECT_EQ(HeadlineBlock(8), 5);
  EXPECT_EQ(HeadlineBlock(4), 2);
  EXPECT_EQ(HeadlineBlock(2), 1);
  EXPECT_EQ(HeadlineBlock(1), 0);
}

// The features at the evaluated dots are the hidden code of an independent
// forward pass at those characters, each board is the FEN the dot sees, and
// the running maxima and active-unit count are those of every position's code.
TEST(CollectBspFeaturesTest, ReadsTheHiddenCodeAtEachEvaluatedDot) {
  auto model = ChessModel("gelu_mlp");
  const std::vector<ChessGame> games = Games(3, 7);
  auto features = CollectBspFeatures(*model, games, 256);
  ASSERT_TRUE(features.ok()) << features.status();
  size_t dots_total = 0;
  std::vector<torch::Tensor> every_position;
  for (size_t g = 0; g < games.size(); ++g) {
    const std::string text = games[g].text().substr(0, 256);
    const std::vector<int> dots = EvaluatedDots(text);
    ASSERT_FALSE(dots.empty());
    std::vector<torch::Tensor> hidden;
    model->FindHook("blocks.3.ffn.hook_hidden")
        ->Add(layers::CaptureHook(&hidden));
    auto ids = datasets::chess::EncodeGame(text);
    ASSERT_TRUE(ids.ok());
    {
      torch::NoGradGuard no_grad;
      model->forward(
          torch::tensor(std::vector<int64_t>(ids->begin(), ids->end()))
              .unsqueeze(0));
    }
    model->ClearHooks();
    for (size_t d = 0; d < dots.size(); ++d) {
      EXPECT_TRUE(
          torch::equal(features->at_dots[3][g][d], hidden[0][0][dots[d]]))
          << "game " << g << " dot " << d;
      auto board = ParseFenBoard(
          games[g].fens(StateIndexAt(text, dots[d], games[g].fens_size())));
      ASSERT_TRUE(board.ok());
      EXPECT_EQ(features->boards[dots_total + d], *board);
    }
    ASSERT_EQ(hidden[0].size(1), static_cast<int64_t>(text.size()));
    every_position.push_back(hidden[0][0]);
    dots_total += dots.size();
  }
  EXPECT_EQ(features->boards.size(), dots_total);
  const torch::Tensor all = torch::cat(every_position);
  EXPECT_EQ(features->positions, all.size(0));
  EXPECT_TRUE(torch::equal(features->maxima[3], FeatureMaxima(all)));
  EXPECT_EQ(features->active_units[3], (all != 0).sum().item<double>());
  EXPECT_TRUE(features->router_scores[3].empty());  // Not a mixture.
}

// Each row's coverage is Coverage() of the collected features; the router
// columns are NaN for a dense model; the headline and seed columns as given.
TEST(EvaluateBspTest, CoverageRowsMatchTheClassifiersOnCollectedFeatures) {
  auto model = ChessModel("gelu_mlp");
  const std::vector<ChessGame> train = Games(4, 11), test = Games(2, 31);
  BspEvaluationOptions options;
  options.model_name = "tiny";
  auto tables = EvaluateBsp(*model, 3, train, test, options);
  ASSERT_TRUE(tables.ok()) << tables.status();
  EXPECT_TRUE(tables->board_tracking.empty());
  EXPECT_EQ(Rows(tables->router_experts).size(), 1u);  // Not a mixture.
  const auto rows = Rows(tables->coverage);
  ASSERT_EQ(rows.size(), 1u + 4 * 2);  // Header, 4 blocks x 2 BSP sets.
  EXPECT_EQ(rows[0].back(), "training_percent");
  EXPECT_EQ(Field(rows, 1, "seed"), 3);
  EXPECT_EQ(Field(rows, 1, "training_percent"), 100);  // A finished model.

  auto features = CollectBspFeatures(*model, train, 256);
  ASSERT_TRUE(features.ok());
  std::vector<torch::Tensor> properties;
  for (const ChessBoard& board : features->boards) {
    properties.push_back(PieceOnSquareProperties(board, true));
  }
  for (int block = 0; block < 4; ++block) {
    const CoverageResult expected =
        Coverage(torch::cat(features->at_dots[block]), features->maxima[block],
                 torch::stack(properties), DefaultThresholds());
    const size_t row = 1 + 2 * block + 1;  // The masked-blank-and-initial set.
    EXPECT_EQ(rows[row][0], "tiny");
    EXPECT_EQ(rows[row][3], "masked_blank_and_initial");
    EXPECT_NEAR(Field(rows, row, "coverage_code"), expected.coverage_code,
                1e-6);
    EXPECT_NEAR(Field(rows, row, "coverage_paper"), expected.coverage_paper,
                1e-6);
    EXPECT_EQ(Field(rows, row, "headline_block"), block == 2 ? 1 : 0);
    EXPECT_EQ(Field(rows, row, "seed"), 3);
    EXPECT_TRUE(std::isnan(Field(rows, row, "router_l0_pearson_pairs")));
    EXPECT_EQ(Field(rows, row, "routed_features"),
              Field(rows, row, "features"));
  }
}

// A mixture reports the router-l0 correlations (MoE-X Fig. 9) as numbers,
// and board tracking gives one row per game policy.
TEST(EvaluateBspTest, MixtureRouterColumnsAndBoardTracking) {
  auto model = ChessModel("moe_x");
  const std::vector<ChessGame> train = Games(3, 5), test = Games(2, 41);
  BspEvaluationOptions options;
  options.model_name = "mix";
  options.characters = 64;
  options.board_tracking = true;
  options.board_tracking_games = 1;
  options.training_percent = 75;  // A snapshot's (MoE-X Fig. 10).
  auto tables = EvaluateBsp(*model, 1, train, test, options);
  ASSERT_TRUE(tables.ok()) << tables.status();
  const auto rows = Rows(tables->coverage);
  for (size_t row = 1; row < rows.size(); ++row) {
    EXPECT_EQ(Field(rows, row, "training_percent"), 75);
    const double r = Field(rows, row, "router_l0_pearson_pairs");
    EXPECT_TRUE(r >= -1 && r <= 1) << r;
    // 4 experts of 8 units, 2 routed (MoE-X Fig. 5's active width).
    EXPECT_EQ(Field(rows, row, "features"), 32);
    EXPECT_EQ(Field(rows, row, "routed_features"), 16);
    const double agreement = Field(rows, row, "sparsest_k_agreement");
    EXPECT_TRUE(agreement >= 0 && agreement <= 1) << agreement;
  }
  // Block 0's router-l0 correlation over (token, expert) pairs, from an
  // independent pass over the train games' FFN inputs.
  std::vector<torch::Tensor> ffn_in;
  for (const ChessGame& game : train) {
    ffn_in.push_back(FfnInputs(*model, 0, game.text().substr(0, 64)));
  }
  {
    torch::NoGradGuard no_grad;
    auto* mixture = dynamic_cast<layers::MixtureOfExpertsImpl*>(
        model->blocks[0]->ffn.get());
    ASSERT_NE(mixture, nullptr);
    const torch::Tensor x = torch::cat(ffn_in);
    const torch::Tensor scores =
        mixture->Route(x).scores.flatten().to(torch::kDouble);
    const torch::Tensor l0 = (mixture->AllPreActivations(x) > 0)
                                 .sum(-1)
                                 .flatten()
                                 .to(torch::kDouble);
    const torch::Tensor a = scores - scores.mean(), b = l0 - l0.mean();
    const double r = ((a * b).sum() / (a.norm() * b.norm())).item<double>();
    EXPECT_NEAR(Field(rows, 1, "router_l0_pearson_pairs"), r, 1e-4);
    // Fig. 9's points: block 0's experts' mean active units and router score.
    const auto experts = Rows(tables->router_experts);
    ASSERT_EQ(experts.size(), 1u + 4 * 4);  // Header, 4 blocks x 4 experts.
    const torch::Tensor mean_l0 =
        (mixture->AllPreActivations(x) > 0).sum(-1).to(torch::kDouble).mean(0);
    const torch::Tensor mean_score =
        mixture->Route(x).scores.to(torch::kDouble).mean(0);
    for (size_t m = 0; m < 4; ++m) {
      EXPECT_EQ(Field(experts, 1 + m, "layer"), 0);
      EXPECT_EQ(Field(experts, 1 + m, "expert"), m);
      EXPECT_NEAR(Field(experts, 1 + m, "mean_active_units"),
                  mean_l0[m].item<double>(), 1e-4);
      EXPECT_NEAR(Field(experts, 1 + m, "mean_router_score"),
                  mean_score[m].item<double>(), 1e-5);
      EXPECT_EQ(Field(experts, 1 + m, "training_percent"), 75);
    }
  }
  const auto tracking = Rows(tables->board_tracking);
  ASSERT_GE(tracking.size(), 2u);
  EXPECT_EQ(tracking[0][0], "model");
  EXPECT_EQ(Field(tracking, 1, "games"), 1);
  EXPECT_EQ(Field(tracking, 1, "training_percent"), 75);
}

// PEER's features are its pool's neurons, each token's g_{h,i} gelu(u_i . x)
// summed over the heads that pick neuron i and zero elsewhere (MoE-X Table 1's
// PEER row; He 2024), computed here from the block's input independently.
TEST(EvaluateBspTest, PeerFeaturesAreGatedNeuronsScatteredIntoThePool) {
  auto model = ChessModel("peer");
  auto* peer =
      dynamic_cast<layers::ProductKeyFfnImpl*>(model->blocks[2]->ffn.get());
  ASSERT_NE(peer, nullptr);
  ASSERT_TRUE(peer->options().peer);
  const std::vector<ChessGame> train = Games(2, 17), test = Games(1, 43);
  auto features = CollectBspFeatures(*model, {train[0]}, 256);
  ASSERT_TRUE(features.ok()) << features.status();

  const std::string text = train[0].text().substr(0, 256);
  const torch::Tensor z = FfnInputs(*model, 2, text);
  torch::NoGradGuard no_grad;
  const layers::ProductTopK routing = peer->Route(z);  // (T, C, k)
  const torch::Tensor gates = torch::softmax(routing.scores, -1);
  const torch::Tensor all_neurons = torch::gelu(z.matmul(peer->experts_in.t()));
  torch::Tensor code = torch::zeros({z.size(0), 16});
  for (int64_t t = 0; t < z.size(0); ++t) {
    for (int64_t c = 0; c < 4; ++c) {
      for (int64_t j = 0; j < 2; ++j) {
        const int64_t i = routing.indices[t][c][j].item<int64_t>();
        code[t][i] += gates[t][c][j] * all_neurons[t][i];
      }
    }
  }
  ExpectCollectedCode(*features, 2, text, code);

  BspEvaluationOptions options;
  options.model_name = "peer";
  auto tables = EvaluateBsp(*model, 2, train, test, options);
  ASSERT_TRUE(tables.ok()) << tables.status();
  const auto rows = Rows(tables->coverage);
  ASSERT_EQ(rows.size(), 1u + 4 * 2);
  for (size_t row = 1; row < rows.size(); ++row) {
    EXPECT_EQ(rows[row][1], "peer");
    EXPECT_EQ(Field(rows, row, "features"), 16);        // The pool.
    EXPECT_EQ(Field(rows, row, "routed_features"), 8);  // 4 heads x 2.
    EXPECT_LE(Field(rows, row, "l0_per_token"), 8);
    EXPECT_TRUE(std::isnan(Field(rows, row, "router_l0_pearson_pairs")));
  }
}

// With an SAE on block 1's FFN output (MoE-X Figs. 3 and 5's baseline), that
// block's features are the SAE's TopK codes of the FFN output at each dot, and
// the table has that block's rows only, naming the SAE and its width.
TEST(EvaluateBspTest, OutputSaeLatentsStandForTheirBlocksUnits) {
  auto model = ChessModel("gelu_mlp", /*sae_block=*/1);
  ASSERT_EQ(OutputSaeBlock(*model), 1);
  EXPECT_EQ(OutputSaeBlock(*ChessModel("gelu_mlp")), -1);
  auto sae = std::dynamic_pointer_cast<layers::SparseReplacementImpl>(
      model->ReplacementLayer());
  ASSERT_TRUE(sae);
  const std::vector<ChessGame> train = Games(3, 13), test = Games(2, 37);
  auto features = CollectBspFeatures(*model, {train[0]}, 256);
  ASSERT_TRUE(features.ok()) << features.status();

  // The FFN's output at every character, from its input, independently.
  const std::string text = train[0].text().substr(0, 256);
  const torch::Tensor x = FfnInputs(*model, 1, text);
  torch::NoGradGuard no_grad;
  const torch::Tensor ffn_out =
      model->blocks[1]->ffn->Forward(x, layers::HookPoint());
  const torch::Tensor codes = Densify(sae->Encode(ffn_out, 3), sae->units());
  ExpectCollectedCode(*features, 1, text, codes);
  EXPECT_LE(features->active_units[1], 3.0 * features->positions);
  // The other blocks are not read at all.
  EXPECT_TRUE(features->at_dots[0].empty());
  EXPECT_FALSE(features->maxima[3].defined());

  BspEvaluationOptions options;
  options.model_name = "sae";
  auto tables = EvaluateBsp(*model, 5, train, test, options);
  ASSERT_TRUE(tables.ok()) << tables.status();
  const auto rows = Rows(tables->coverage);
  ASSERT_EQ(rows.size(), 1u + 2);  // Header, block 1 x 2 BSP sets.
  for (size_t row = 1; row < rows.size(); ++row) {
    EXPECT_EQ(rows[row][1], "topk_sae");
    EXPECT_EQ(Field(rows, row, "layer"), 1);
    EXPECT_EQ(Field(rows, row, "features"), 24);
    EXPECT_EQ(Field(rows, row, "routed_features"), 24);
    EXPECT_LE(Field(rows, row, "l0_per_token"), 3);
    EXPECT_EQ(Field(rows, row, "headline_block"), 0);
  }
  auto all_games = CollectBspFeatures(*model, train, 256);
  ASSERT_TRUE(all_games.ok()) << all_games.status();
  std::vector<torch::Tensor> properties;
  for (const ChessBoard& board : all_games->boards) {
    properties.push_back(PieceOnSquareProperties(board, false));
  }
  EXPECT_NEAR(Field(rows, 1, "coverage_code"),
              Coverage(torch::cat(all_games->at_dots[1]), all_games->maxima[1],
                       torch::stack(properties), DefaultThresholds())
                  .coverage_code,
              1e-6);
}

}  // namespace
}  // namespace sparse_layers::analysis
