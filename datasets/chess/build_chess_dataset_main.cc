// Turns pgn-extract's SAN-plus-FEN games into the chess dataset: character
// token shards for training and validation (the trainer's input) and the
// BSP-train / BSP-test JSONL games with a FEN per ply (the metrics' input).
// Games are assigned by their order in the pool: train, validation, then the
// BSP splits, which keep only games with enough '.' positions.
#include <algorithm>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "datasets/chess/chess_games.h"
#include "datasets/text/token_shards.h"
#include "google/protobuf/text_format.h"
#include "layers/backend/torch_init.h"
#include "tools/common/digest.h"
#include "tools/common/file_io.h"
#include "tools/common/staged_outputs.h"

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

absl::Status WriteTokens(const std::string& dir, const std::string& split,
                         const std::vector<ChessGame>& games,
                         const std::string& source_sha256,
                         SplitSummary* summary) {
  TokenShardManifest header;
  header.set_split(split);
  header.set_vocab_size(static_cast<int>(kVocabulary.size()));
  header.set_end_of_text_id(static_cast<int>(kVocabulary.find(';')));
  header.set_source_sha256(source_sha256);
  header.set_tokenizer_sha256(Sha256Hex(kVocabulary));
  TokenSplitWriter writer(dir, header, int64_t{1} << 24);
  summary->set_name(split);
  for (const ChessGame& game : games) {
    auto ids = EncodeGame(game.text());
    if (!ids.ok()) return ids.status();
    // Every game starts with its own ';' delimiter.
    if (auto s = writer.AddDocument(*ids, /*end_of_text=*/false); !s.ok()) {
      return s;
    }
    summary->set_games(summary->games() + 1);
    summary->set_characters(summary->characters() + ids->size());
  }
  return writer.Finish().status();
}

absl::Status Run() {
  if (absl::Status s = FirstError(
          {RequiredFile(FLAGS_pgn), RequiredFile(FLAGS_games_manifest),
           RequiredFlag(FLAGS_out_dir), FlagAtLeast(FLAGS_train_games, 0),
           FlagAtLeast(FLAGS_validation_games, 0),
           FlagAtLeast(FLAGS_bsp_games, 0),
           FlagAtLeast(FLAGS_bsp_characters, 1),
           FlagAtLeast(FLAGS_bsp_min_dots, 0)});
      !s.ok()) {
    return s;
  }
  const std::string out_dir = absl::GetFlag(FLAGS_out_dir);
  auto pgn = ReadFileToString(absl::GetFlag(FLAGS_pgn));
  if (!pgn.ok()) return pgn.status();
  auto games = ParsePgnExtractOutput(*pgn);
  if (!games.ok()) return games.status();
  std::sort(games->begin(), games->end(),
            [](const ChessGame& a, const ChessGame& b) {
              return a.index() < b.index();
            });
  DatasetManifest manifest;
  manifest.set_vocabulary(std::string(kVocabulary));
  manifest.set_context_characters(absl::GetFlag(FLAGS_bsp_characters));
  manifest.set_source_sha256(Sha256Hex(*pgn));
  auto games_manifest = ReadFileToString(absl::GetFlag(FLAGS_games_manifest));
  if (!games_manifest.ok()) return games_manifest.status();
  google::protobuf::TextFormat::ParseFromString(*games_manifest,
                                                manifest.mutable_games());

  const int64_t n_train = absl::GetFlag(FLAGS_train_games),
                n_validation = absl::GetFlag(FLAGS_validation_games),
                n_bsp = absl::GetFlag(FLAGS_bsp_games);
  if (static_cast<int64_t>(games->size()) <
      n_train + n_validation + 2 * n_bsp) {
    return absl::InvalidArgumentError(
        absl::StrCat("the pool has ", games->size(), " games, fewer than ",
                     n_train + n_validation + 2 * n_bsp));
  }
  // Shards, BSP games and manifest appear together or not at all.
  StagedOutputs outputs;
  auto begin = games->begin();
  const std::vector<ChessGame> train(begin, begin + n_train);
  const std::vector<ChessGame> validation(begin + n_train,
                                          begin + n_train + n_validation);
  for (const auto& [split, list] :
       {std::pair<std::string, const std::vector<ChessGame>*>{"train", &train},
        {"validation", &validation}}) {
    auto dir = outputs.StageDirectory(absl::StrCat(out_dir, "/", split));
    if (!dir.ok()) return dir.status();
    if (auto s = WriteTokens(*dir, split, *list, manifest.source_sha256(),
                             manifest.add_splits());
        !s.ok()) {
      return s;
    }
  }
  // BSP splits: the next games with >= bsp_min_dots '.' in their evaluated
  // prefix, the first n_bsp to BSP-train and the next n_bsp to BSP-test.
  const int characters = absl::GetFlag(FLAGS_bsp_characters);
  auto next = begin + n_train + n_validation;
  for (const std::string split : {"bsp_train", "bsp_test"}) {
    SplitSummary* summary = manifest.add_splits();
    summary->set_name(split);
    std::string jsonl;
    while (summary->games() < n_bsp) {
      if (next == games->end()) {
        return absl::InvalidArgumentError(
            absl::StrCat(split,
                         ": the pool ran out; generate more games for the BSP "
                         "splits"));
      }
      const ChessGame& game = *next++;
      const std::string prefix = game.text().substr(0, characters);
      if (std::count(prefix.begin(), prefix.end(), '.') <
          absl::GetFlag(FLAGS_bsp_min_dots)) {
        summary->set_games_filtered(summary->games_filtered() + 1);
        continue;
      }
      absl::StrAppend(&jsonl, GameToJson(game), "\n");
      summary->set_games(summary->games() + 1);
      summary->set_characters(summary->characters() + game.text().size());
    }
    if (auto s = outputs.WriteFile(absl::StrCat(out_dir, "/", split, ".jsonl"),
                                   jsonl);
        !s.ok()) {
      return s;
    }
  }
  std::string text;
  google::protobuf::TextFormat::PrintToString(manifest, &text);
  if (auto s = outputs.WriteFile(
          absl::StrCat(out_dir, "/dataset.manifest.textproto"), text);
      !s.ok()) {
    return s;
  }
  return outputs.Commit();
}

}  // namespace
}  // namespace sparse_layers::datasets::chess

int main(int argc, char** argv) {
  sparse_layers::InitMain(argc, argv,
                          "Builds the chess splits from pgn-extract output.");
  return sparse_layers::RunMain(sparse_layers::datasets::chess::Run);
}
