// evaluate_bsp: one chess model's FFN units as board-state-property
// classifiers (analysis/bsp/bsp_evaluation.h; MoE-X arXiv:2503.07639 Sec. 3.1,
// App. B), and with --board_tracking_out whether it tracks the board at all.
// Without --checkpoint the model is the randomly initialised control of
// --config. A positional argument is an SAE fitted on one block's FFN output
// of --checkpoint (//pipelines/train:fit, on_output): that block's SAE latents
// are evaluated instead of the model's units (MoE-X Figs. 3 and 5's SAE
// baseline). Every row carries the model's runtime.seed (`seed`, the claims
// engine's seed column).
//
//   evaluate_bsp --checkpoint=gelu_s1.pt --name=gelu --bsp_train=T.jsonl
//       --bsp_test=E.jsonl --out=bsp.csv --board_tracking_out=tracking.csv
//       --router_out=router.csv
//   evaluate_bsp --checkpoint=alpha4_s1.pt --name=sae_alpha4 ... sae_s1.pt
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "analysis/bsp/bsp_evaluation.h"
#include "base/common/cpu_slots.h"
#include "base/common/file_io.h"
#include "base/common/staged_outputs.h"
#include "base/common/status_macros.h"
#include "config/config_loader.h"
#include "datasets/chess/chess_games.h"
#include "models/model_loader.h"
#include "ops/backend/torch_init.h"
#include "ops/backend/torch_runtime.h"

ABSL_FLAG(std::string, checkpoint, "", "Trained model (lm_checkpoint .pt).");
ABSL_FLAG(int, training_percent, -1,
          "The `training_percent` column: share of its training the model has "
          "had (a snapshot's percent; default 100 for --checkpoint, 0 for "
          "--config's random initialisation)");
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
ABSL_FLAG(std::string, router_out, "",
          "Optional CSV of each mixture expert's mean router score and mean "
          "active units per token, one row per (block, expert) (MoE-X Fig. 9); "
          "the header alone for a model without a mixture.");
ABSL_FLAG(int, board_tracking_games, 50,
          "BSP-test games read for board tracking (the first ones).");

namespace sparse_layers::analysis {
namespace {

using datasets::chess::ChessGame;

// The trained model of --checkpoint, with the SAE of `fit_path` spliced in
// when given, or a random initialisation of --config's model from its
// runtime.seed (the controls).
absl::StatusOr<layers::LoadedModel> TrainedOrControl(
    const std::string& fit_path) {
  if (const std::string checkpoint = absl::GetFlag(FLAGS_checkpoint);
      !checkpoint.empty()) {
    ASSIGN_OR_RETURN(layers::LoadedModel base, layers::LoadModel(checkpoint));
    if (fit_path.empty()) return base;
    ASSIGN_OR_RETURN(layers::LoadedReplacement fit,
                     layers::LoadReplacement(fit_path));
    RETURN_IF_ERROR(layers::CheckFittedOn(fit, base, checkpoint));
    if (OutputSaeBlock(*fit.loaded.model) < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          fit_path, " is not an SAE on an FFN output (replacement.on_output)"));
    }
    fit.loaded.model->eval();
    return fit.loaded;
  }
  layers::LoadedModel control;
  ASSIGN_OR_RETURN(control.config,
                   config::LoadExperimentConfig({absl::GetFlag(FLAGS_config)}));
  ASSIGN_OR_RETURN(control.model, layers::InitializeModel(control.config));
  control.model->eval();
  return control;
}

absl::StatusOr<std::vector<ChessGame>> ReadGames(const std::string& path) {
  ASSIGN_OR_RETURN(const std::string jsonl, ReadFileToString(path));
  return datasets::chess::ParseGamesJsonl(jsonl);
}

absl::Status Run(const std::vector<std::string>& fits) {
  RETURN_IF_ERROR(FilesExist("fit", fits));
  RETURN_IF_ERROR(FirstError(
      {FlagFilesExist(FLAGS_checkpoint), FlagFilesExist(FLAGS_config),
       RequiredFile(FLAGS_bsp_train), RequiredFile(FLAGS_bsp_test),
       RequiredFlag(FLAGS_out), FlagAtLeast(FLAGS_characters, 1),
       FlagAtLeast(FLAGS_board_tracking_games, 1)}));
  if (absl::GetFlag(FLAGS_checkpoint).empty() ==
      absl::GetFlag(FLAGS_config).empty()) {
    return absl::InvalidArgumentError(
        "give one of --checkpoint (a trained model) and --config (its "
        "randomly initialised control)");
  }
  const bool trained = !absl::GetFlag(FLAGS_checkpoint).empty();
  if (fits.size() > 1 || (!fits.empty() && !trained)) {
    return absl::InvalidArgumentError(
        "give at most one fit, an SAE on --checkpoint's FFN output");
  }
  if (!fits.empty() && !absl::GetFlag(FLAGS_board_tracking_out).empty()) {
    return absl::InvalidArgumentError(
        "--board_tracking_out reads the model itself: run it without the fit");
  }
  const int percent = absl::GetFlag(FLAGS_training_percent);
  if (percent < -1 || percent > 100 ||
      (percent >= 0 && !trained && percent != 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--training_percent must be in [0, 100] (0 for --config's random "
        "initialisation), got ",
        percent));
  }
  // Evaluation is as heavy as training: share the cores through the slots.
  RETURN_IF_ERROR(AcquireCpuSlotIfRequested(absl::GetFlag(FLAGS_threads)));
  ASSIGN_OR_RETURN(const layers::LoadedModel model,
                   TrainedOrControl(fits.empty() ? "" : fits[0]));
  ASSIGN_OR_RETURN(const std::vector<ChessGame> bsp_train,
                   ReadGames(absl::GetFlag(FLAGS_bsp_train)));
  ASSIGN_OR_RETURN(const std::vector<ChessGame> bsp_test,
                   ReadGames(absl::GetFlag(FLAGS_bsp_test)));
  BspEvaluationOptions options;
  options.model_name = absl::GetFlag(FLAGS_name);
  options.training_percent = percent >= 0 ? percent : trained ? 100 : 0;
  options.characters = absl::GetFlag(FLAGS_characters);
  options.board_tracking = !absl::GetFlag(FLAGS_board_tracking_out).empty();
  options.board_tracking_games = absl::GetFlag(FLAGS_board_tracking_games);
  ASSIGN_OR_RETURN(const BspTables tables,
                   EvaluateBsp(*model.model, model.config.runtime().seed(),
                               bsp_train, bsp_test, options));
  StagedOutputs outputs;  // Every table or none.
  RETURN_IF_ERROR(outputs.WriteFile(absl::GetFlag(FLAGS_out), tables.coverage));
  if (options.board_tracking) {
    RETURN_IF_ERROR(outputs.WriteFile(absl::GetFlag(FLAGS_board_tracking_out),
                                      tables.board_tracking));
  }
  if (const std::string router_out = absl::GetFlag(FLAGS_router_out);
      !router_out.empty()) {
    RETURN_IF_ERROR(outputs.WriteFile(router_out, tables.router_experts));
  }
  return outputs.Commit();
}

}  // namespace
}  // namespace sparse_layers::analysis

int main(int argc, char** argv) {
  const std::vector<std::string> fits = sparse_layers::InitMain(
      argc, argv,
      "BSP coverage and reconstruction of one chess model (or of an SAE on "
      "its FFN output, given as the positional argument).");
  (void)sparse_layers::backend::SetTorchThreads(2);
  return sparse_layers::RunMain(
      [&] { return sparse_layers::analysis::Run(fits); });
}
