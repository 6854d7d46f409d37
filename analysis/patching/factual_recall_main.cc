// factual_recall: the tables of analysis/patching/factual_recall.h for a
// product-key (sgatlin) LM and a dense-FFN LM trained alike: recall.csv,
// patching.csv, block_contrasts.csv and neighbours.csv in --out_dir.
#include <filesystem>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "analysis/patching/factual_recall.h"
#include "base/common/cpu_slots.h"
#include "base/common/file_io.h"
#include "base/common/staged_outputs.h"
#include "base/common/status_macros.h"
#include "datasets/text/tokenizer.h"
#include "models/model_loader.h"
#include "ops/backend/torch_init.h"

ABSL_FLAG(std::string, model, "", "The product-key (sgatlin) LM, .pt");
ABSL_FLAG(std::string, dense_model, "", "The dense-FFN LM trained alike, .pt");
ABSL_FLAG(std::string, tokenizer, "", "Their SentencePiece model");
ABSL_FLAG(std::string, facts, "", "CSV with a header: answer,subject");
ABSL_FLAG(std::string, brown_dir, "",
          "Tagged Brown corpus files (word classes)");
ABSL_FLAG(std::string, tokens, "", "Held-out token split for gating vectors");
ABSL_FLAG(int, windows, 32, "Held-out windows of 128 tokens for neighbours");
ABSL_FLAG(int, neighbours, 10, "Nearest neighbours per gating vector");
ABSL_FLAG(std::string, out_dir, "", "Where the CSVs go");

namespace sparse_layers::analysis {
namespace {

absl::Status Run() {
  RETURN_IF_ERROR(
      FirstError({RequiredFile(FLAGS_model), RequiredFile(FLAGS_dense_model),
                  RequiredFile(FLAGS_tokenizer), RequiredFile(FLAGS_facts),
                  RequiredFlag(FLAGS_brown_dir), RequiredFile(FLAGS_tokens),
                  RequiredFlag(FLAGS_out_dir), FlagAtLeast(FLAGS_windows, 1),
                  FlagAtLeast(FLAGS_neighbours, 1)}));
  if (std::error_code e;
      !std::filesystem::is_directory(absl::GetFlag(FLAGS_brown_dir), e)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--brown_dir: ", absl::GetFlag(FLAGS_brown_dir),
                     " is not a directory"));
  }
  RETURN_IF_ERROR(AcquireCpuSlotIfRequested(absl::GetFlag(FLAGS_threads)));
  std::string error;
  auto tok = datasets::Tokenizer::Load(absl::GetFlag(FLAGS_tokenizer), &error);
  if (!tok) return absl::InvalidArgumentError(error);
  ASSIGN_OR_RETURN(const std::string facts_csv,
                   ReadFileToString(absl::GetFlag(FLAGS_facts)));
  ASSIGN_OR_RETURN(
      const std::vector<analysis::Fact> facts,
      analysis::ParseFacts(facts_csv, *tok, absl::GetFlag(FLAGS_facts)));
  ASSIGN_OR_RETURN(layers::LoadedModel sparse,
                   layers::LoadModel(absl::GetFlag(FLAGS_model)));
  ASSIGN_OR_RETURN(layers::LoadedModel dense,
                   layers::LoadModel(absl::GetFlag(FLAGS_dense_model)));

  analysis::FactRecallTables tables;
  const std::vector<int64_t> prefix = analysis::PromptPrefix(*tok);
  RETURN_IF_ERROR(analysis::AppendPatching(
      "sgatlin", sparse.config.runtime().seed(), *sparse.model,
      analysis::PatchKind::kRouting, facts, *tok, prefix, tables));
  RETURN_IF_ERROR(analysis::AppendPatching(
      "dense", dense.config.runtime().seed(), *dense.model,
      analysis::PatchKind::kFfnHidden, facts, *tok, prefix, tables));
  ASSIGN_OR_RETURN(const auto lexicon,
                   analysis::BrownLexicon(absl::GetFlag(FLAGS_brown_dir)));
  analysis::NeighbourOptions neighbours;
  neighbours.tokens_manifest = absl::GetFlag(FLAGS_tokens);
  neighbours.windows = absl::GetFlag(FLAGS_windows);
  neighbours.neighbours = absl::GetFlag(FLAGS_neighbours);
  RETURN_IF_ERROR(analysis::AppendNeighbours(sparse.config.runtime().seed(),
                                             *sparse.model, *dense.model, *tok,
                                             lexicon, neighbours, tables));

  const std::string dir = absl::GetFlag(FLAGS_out_dir);
  return StagedOutputs().WriteFilesAndCommit(
      dir, {{"recall.csv", tables.recall},
            {"patching.csv", tables.patching},
            {"disruption_null.csv", tables.disruption_null},
            {"block_contrasts.csv", tables.block_contrasts},
            {"neighbours.csv", tables.neighbours},
            {"neighbour_circuits.txt", tables.circuits}});
}

}  // namespace
}  // namespace sparse_layers::analysis

int main(int argc, char** argv) {
  sparse_layers::InitMain(argc, argv,
                          "factual_recall --model=S.pt --dense_model=D.pt "
                          "--tokenizer=T --facts=F.csv --out_dir=DIR");
  return sparse_layers::RunMain(sparse_layers::analysis::Run);
}
