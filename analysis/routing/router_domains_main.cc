// router_domains: MoHD sub-dimension routing by domain (arXiv:2412.05644
// Sec. 5.4, Fig. 11), router_domains.csv and router_specialisation.csv of
// analysis/routing/router_domains.h, for each model on held-out documents
// grouped by their corpus source.
//
//   router_domains --models=mohd_x2=a.pt,mohd_x2_random_routing=b.pt
//       --corpus_dir=.../mixed --split=test --tokenizer=bpe_small.model
//       --out_dir=DIR
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "analysis/routing/router_domains.h"
#include "base/common/cpu_slots.h"
#include "base/common/file_io.h"
#include "base/common/keyed_paths.h"
#include "base/common/staged_outputs.h"
#include "base/common/status_macros.h"
#include "datasets/text/tokenizer.h"
#include "models/model_loader.h"
#include "ops/backend/torch_init.h"

ABSL_FLAG(std::vector<std::string>, models, {}, "name=checkpoint.pt, ...");
ABSL_FLAG(std::string, corpus_dir, "",
          "A text_corpus directory (datasets/text:mixed): <split>.jsonl, each "
          "document's \"source\" its domain");
ABSL_FLAG(std::string, split, "test", "The split read (held out: test)");
ABSL_FLAG(std::string, tokenizer, "", "The models' tokenizer");
ABSL_FLAG(int64_t, tokens_per_domain, 8192,
          "Tokens per domain, half in each of its two halves");
ABSL_FLAG(int, sequence_length, 128, "Window length (capped at the context)");
ABSL_FLAG(std::string, out_dir, "",
          "Where router_domains.csv and router_specialisation.csv go");

namespace sparse_layers::analysis {
namespace {

absl::Status Run() {
  RETURN_IF_ERROR(
      FirstError({RequiredFlag(FLAGS_models), RequiredFlag(FLAGS_corpus_dir),
                  RequiredFlag(FLAGS_split), RequiredFile(FLAGS_tokenizer),
                  RequiredFlag(FLAGS_out_dir),
                  FlagAtLeast(FLAGS_tokens_per_domain, int64_t{4}),
                  FlagAtLeast(FLAGS_sequence_length, 2)}));
  ASSIGN_OR_RETURN(const std::vector<KeyedPath> models,
                   KeyedPaths("models", "name", absl::GetFlag(FLAGS_models)));
  RETURN_IF_ERROR(AcquireCpuSlotIfRequested(absl::GetFlag(FLAGS_threads)));
  std::string error;
  const std::unique_ptr<datasets::Tokenizer> tokenizer =
      datasets::Tokenizer::Load(absl::GetFlag(FLAGS_tokenizer), &error);
  if (!tokenizer) return absl::InvalidArgumentError(error);
  ASSIGN_OR_RETURN(
      const std::string jsonl,
      ReadFileToString(absl::StrCat(absl::GetFlag(FLAGS_corpus_dir), "/",
                                    absl::GetFlag(FLAGS_split), ".jsonl")));
  RouterDomainOptions options;
  options.tokens_per_domain = absl::GetFlag(FLAGS_tokens_per_domain);
  options.sequence_length = absl::GetFlag(FLAGS_sequence_length);
  ASSIGN_OR_RETURN(
      const std::vector<datasets::DomainTokens> domains,
      datasets::DomainHalves(jsonl, *tokenizer, options.tokens_per_domain));
  if (domains.size() < 2) {
    std::fprintf(stderr,
                 "router_domains: documents from %zu source(s), no two domains "
                 "to compare: the tables stay empty\n",
                 domains.size());
  }
  RouterDomainTables tables;
  for (const auto& [name, path] : models) {
    ASSIGN_OR_RETURN(const layers::LoadedModel loaded, layers::LoadModel(path));
    if (tokenizer->vocab_size() > loaded.model->options().vocab_size) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--tokenizer has ", tokenizer->vocab_size(), " pieces, ", path,
          " a vocabulary of ", loaded.model->options().vocab_size));
    }
    options.seed = loaded.config.runtime().seed();
    RETURN_IF_ERROR(
        tables.AddModel(name, options.seed, *loaded.model, domains, options));
  }
  const std::string dir = absl::GetFlag(FLAGS_out_dir);
  StagedOutputs outputs;  // Both tables or neither.
  RETURN_IF_ERROR(
      outputs.WriteFile(dir + "/router_domains.csv", tables.domains_csv()));
  RETURN_IF_ERROR(outputs.WriteFile(dir + "/router_specialisation.csv",
                                    tables.specialisation_csv()));
  return outputs.Commit();
}

}  // namespace
}  // namespace sparse_layers::analysis

int main(int argc, char** argv) {
  sparse_layers::InitMain(
      argc, argv,
      "router_domains --models=name=ckpt.pt,... "
      "--corpus_dir=D --split=test --tokenizer=M --out_dir=DIR");
  return sparse_layers::RunMain(sparse_layers::analysis::Run);
}
