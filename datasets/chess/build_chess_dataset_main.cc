// build_chess_dataset: pgn-extract's SAN-plus-FEN games turned into the chess
// dataset (datasets/chess/chess_dataset.h): character token shards for
// training and validation and the BSP-train / BSP-test JSONL games with a FEN
// per ply, beside a DatasetManifest.
//
//   build_chess_dataset --pgn=games.san.pgn
//       --games_manifest=games.manifest.textproto --train_games=400
//       --validation_games=20 --bsp_games=10 --out_dir=chess
#include <cstdint>
#include <string>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "base/common/main.h"
#include "base/common/staged_outputs.h"
#include "base/common/status_macros.h"
#include "datasets/chess/chess_dataset.h"
#include "ops/backend/torch_init.h"

ABSL_FLAG(std::string, pgn, "", "pgn-extract output (SAN with FEN comments).");
ABSL_FLAG(std::string, games_manifest, "", "generate_games' manifest.");
ABSL_FLAG(int64_t, train_games, 0, "Games in the training split.");
ABSL_FLAG(int64_t, validation_games, 0, "Games in the validation split.");
ABSL_FLAG(int64_t, bsp_games, 0, "Games in each of BSP-train and BSP-test.");
ABSL_FLAG(int, bsp_characters, 256,
          "Characters of a BSP game that are evaluated (as Karvonen et al.'s "
          "evaluation code picks them).");
ABSL_FLAG(int, bsp_min_dots, 20, "'.' positions a BSP game must have.");
ABSL_FLAG(std::string, out_dir, "", "Output directory.");

namespace sparse_layers::datasets::chess {
namespace {

absl::Status Run() {
  RETURN_IF_ERROR(FirstError(
      {RequiredFile(FLAGS_pgn), RequiredFile(FLAGS_games_manifest),
       RequiredFlag(FLAGS_out_dir), FlagAtLeast(FLAGS_train_games, 0),
       FlagAtLeast(FLAGS_validation_games, 0), FlagAtLeast(FLAGS_bsp_games, 0),
       FlagAtLeast(FLAGS_bsp_characters, 1),
       FlagAtLeast(FLAGS_bsp_min_dots, 0)}));
  ChessDatasetOptions options;
  options.pgn = absl::GetFlag(FLAGS_pgn);
  options.games_manifest = absl::GetFlag(FLAGS_games_manifest);
  options.out_dir = absl::GetFlag(FLAGS_out_dir);
  options.train_games = absl::GetFlag(FLAGS_train_games);
  options.validation_games = absl::GetFlag(FLAGS_validation_games);
  options.bsp_games = absl::GetFlag(FLAGS_bsp_games);
  options.bsp_characters = absl::GetFlag(FLAGS_bsp_characters);
  options.bsp_min_dots = absl::GetFlag(FLAGS_bsp_min_dots);
  StagedOutputs outputs;
  RETURN_IF_ERROR(BuildChessDataset(options, outputs));
  return outputs.Commit();
}

}  // namespace
}  // namespace sparse_layers::datasets::chess

int main(int argc, char** argv) {
  sparse_layers::InitMain(argc, argv,
                          "Builds the chess splits from pgn-extract output.");
  return sparse_layers::RunMain(sparse_layers::datasets::chess::Run);
}
