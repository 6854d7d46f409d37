#include "datasets/chess/chess_dataset.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/common/digest.h"
#include "base/common/file_io.h"
#include "base/common/status_macros.h"
#include "base/common/text_proto.h"
#include "datasets/chess/chess_games.h"
#include "datasets/text/token_shards.h"
#include "google/protobuf/text_format.h"

namespace sparse_layers::datasets::chess {

absl::Status WriteChessTokenSplit(const std::string& dir,
                                  const std::string& split,
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
    ASSIGN_OR_RETURN(const std::vector<int> ids, EncodeGame(game.text()));
    // Every game starts with its own ';' delimiter.
    RETURN_IF_ERROR(writer.AddDocument(ids, /*end_of_text=*/false));
    summary->set_games(summary->games() + 1);
    summary->set_characters(summary->characters() + ids.size());
  }
  return writer.Finish().status();
}

absl::StatusOr<std::string> TakeBspGames(const std::string& split,
                                         const std::vector<ChessGame>& pool,
                                         size_t* next,
                                         const ChessDatasetOptions& options,
                                         SplitSummary* summary) {
  summary->set_name(split);
  std::string jsonl;
  while (summary->games() < options.bsp_games) {
    if (*next == pool.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          split, ": the pool ran out; generate more games for the BSP splits"));
    }
    const ChessGame& game = pool[(*next)++];
    const std::string prefix = game.text().substr(0, options.bsp_characters);
    if (std::count(prefix.begin(), prefix.end(), '.') < options.bsp_min_dots) {
      summary->set_games_filtered(summary->games_filtered() + 1);
      continue;
    }
    absl::StrAppend(&jsonl, GameToJson(game), "\n");
    summary->set_games(summary->games() + 1);
    summary->set_characters(summary->characters() + game.text().size());
  }
  return jsonl;
}

absl::Status BuildChessDataset(const ChessDatasetOptions& options,
                               StagedOutputs& outputs) {
  const std::string& out_dir = options.out_dir;
  ASSIGN_OR_RETURN(const std::string pgn, ReadFileToString(options.pgn));
  ASSIGN_OR_RETURN(std::vector<ChessGame> games, ParsePgnExtractOutput(pgn));
  std::sort(games.begin(), games.end(),
            [](const ChessGame& a, const ChessGame& b) {
              return a.index() < b.index();
            });
  DatasetManifest manifest;
  manifest.set_vocabulary(std::string(kVocabulary));
  manifest.set_context_characters(options.bsp_characters);
  manifest.set_source_sha256(Sha256Hex(pgn));
  ASSIGN_OR_RETURN(const std::string games_manifest,
                   ReadFileToString(options.games_manifest));
  RETURN_IF_ERROR(ParseTextProto(games_manifest, options.games_manifest,
                                 manifest.mutable_games()));

  const int64_t n_train = options.train_games,
                n_validation = options.validation_games,
                n_bsp = options.bsp_games;
  if (static_cast<int64_t>(games.size()) < n_train + n_validation + 2 * n_bsp) {
    return absl::InvalidArgumentError(
        absl::StrCat("the pool has ", games.size(), " games, fewer than ",
                     n_train + n_validation + 2 * n_bsp));
  }
  // Shards, BSP games and manifest appear together or not at all.
  auto begin = games.begin();
  const std::vector<ChessGame> train(begin, begin + n_train);
  const std::vector<ChessGame> validation(begin + n_train,
                                          begin + n_train + n_validation);
  for (const auto& [split, list] :
       {std::pair<std::string, const std::vector<ChessGame>*>{"train", &train},
        {"validation", &validation}}) {
    ASSIGN_OR_RETURN(const std::string dir,
                     outputs.StageDirectory(absl::StrCat(out_dir, "/", split)));
    RETURN_IF_ERROR(WriteChessTokenSplit(
        dir, split, *list, manifest.source_sha256(), manifest.add_splits()));
  }
  // BSP splits: the first bsp_games kept games to BSP-train, the next to
  // BSP-test.
  size_t next = static_cast<size_t>(n_train + n_validation);
  for (const std::string split : {"bsp_train", "bsp_test"}) {
    ASSIGN_OR_RETURN(
        const std::string jsonl,
        TakeBspGames(split, games, &next, options, manifest.add_splits()));
    RETURN_IF_ERROR(
        outputs.WriteFile(absl::StrCat(out_dir, "/", split, ".jsonl"), jsonl));
  }
  std::string text;
  google::protobuf::TextFormat::PrintToString(manifest, &text);
  return outputs.WriteFile(absl::StrCat(out_dir, "/dataset.manifest.textproto"),
                           text);
}

}  // namespace sparse_layers::datasets::chess
