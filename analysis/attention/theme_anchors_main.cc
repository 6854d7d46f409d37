// theme_anchors: Lorsa heads that keep a topic across a text, with the held-out
// corpus's sources as topics (Lorsa, arXiv:2504.20938 Sec. 6.3, Fig. 12);
// analysis/attention/theme_anchors.h.
//
//   theme_anchors --base=lm.pt --corpus_dir=.../corpus --tokenizer=bpe.model
//       --out_dir=DIR lorsa_b0_k_s1.pt lorsa_b1_k_s1.pt
#include <algorithm>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "analysis/attention/lorsa_evaluation.h"
#include "analysis/attention/per_layer_lorsas.h"
#include "analysis/attention/theme_anchors.h"
#include "base/common/cpu_slots.h"
#include "base/common/file_io.h"
#include "base/common/main.h"
#include "base/common/staged_outputs.h"
#include "base/common/status_macros.h"
#include "datasets/text/domain_documents.h"
#include "datasets/text/tokenizer.h"
#include "models/model_loader.h"
#include "ops/backend/torch_init.h"

ABSL_FLAG(std::string, base, "", "The base model (.pt)");
ABSL_FLAG(std::string, corpus_dir, "",
          "A text_corpus directory: <split>.jsonl, each document's \"source\" "
          "its topic");
ABSL_FLAG(std::string, split, "test", "The split read (held out: test)");
ABSL_FLAG(std::vector<std::string>, exclude_sources, {"synthetic"},
          "Sources that are not topics (the planted documents)");
ABSL_FLAG(std::string, tokenizer, "", "The base model's tokenizer");
ABSL_FLAG(int64_t, tokens_per_domain, 8192,
          "Tokens per source, half in each of its two halves");
ABSL_FLAG(int64_t, min_active, 20,
          "Active tokens of its source a candidate head needs");
ABSL_FLAG(double, min_persistence, 0.2,
          "Share of its source's tokens a candidate head is active on");
ABSL_FLAG(double, min_reach, 8,
          "Mean distance back a candidate head reads, weighted by A |v|");
ABSL_FLAG(double, max_sink_share, 0.5,
          "Largest share of a candidate head's read weight on position 0");
ABSL_FLAG(int, permutations, 20, "Draws of the shuffled-source control");
ABSL_FLAG(int64_t, local_keys, 8,
          "Keys the local-context control keeps per query");
ABSL_FLAG(int, sequence_length, 0,
          "Window length, the fits' (0: the base model's context)");
ABSL_FLAG(std::string, out_dir, "", "Where the outputs go");

namespace sparse_layers::analysis {
namespace {

absl::Status Run(const std::vector<std::string>& paths) {
  RETURN_IF_ERROR(
      FirstError({RequiredFile(FLAGS_base), RequiredFlag(FLAGS_corpus_dir),
                  RequiredFlag(FLAGS_split), RequiredFile(FLAGS_tokenizer),
                  RequiredFlag(FLAGS_out_dir),
                  FlagAtLeast(FLAGS_tokens_per_domain, int64_t{4}),
                  FlagAtLeast(FLAGS_min_active, int64_t{1}),
                  FlagAtLeast(FLAGS_permutations, 1),
                  FlagAtLeast(FLAGS_local_keys, int64_t{1}),
                  FlagAtLeast(FLAGS_sequence_length, 0),
                  FitsGiven("theme_anchors", "Lorsa fit", paths)}));
  RETURN_IF_ERROR(AcquireCpuSlotIfRequested(absl::GetFlag(FLAGS_threads)));
  ASSIGN_OR_RETURN(const layers::LoadedModel base,
                   layers::LoadModel(absl::GetFlag(FLAGS_base)));
  std::string error;
  auto tok = datasets::Tokenizer::Load(absl::GetFlag(FLAGS_tokenizer), &error);
  if (!tok) return absl::InvalidArgumentError(error);
  const int64_t window = FitWindowLength(base.model->options().context_length,
                                         absl::GetFlag(FLAGS_sequence_length));
  if (absl::GetFlag(FLAGS_tokens_per_domain) < 2 * window) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--tokens_per_domain=", absl::GetFlag(FLAGS_tokens_per_domain),
        " leaves no whole ", window, "-token window in a half"));
  }
  ASSIGN_OR_RETURN(
      const std::string jsonl,
      ReadFileToString(absl::StrCat(absl::GetFlag(FLAGS_corpus_dir), "/",
                                    absl::GetFlag(FLAGS_split), ".jsonl")));
  ASSIGN_OR_RETURN(std::vector<datasets::DomainTokens> domains,
                   datasets::DomainHalves(
                       jsonl, *tok, absl::GetFlag(FLAGS_tokens_per_domain)));
  const std::vector<std::string> excluded =
      absl::GetFlag(FLAGS_exclude_sources);
  domains.erase(std::remove_if(domains.begin(), domains.end(),
                               [&](const datasets::DomainTokens& d) {
                                 return std::find(excluded.begin(),
                                                  excluded.end(),
                                                  d.domain) != excluded.end();
                               }),
                domains.end());
  ASSIGN_OR_RETURN(std::vector<LorsaFit> fits, LoadLorsaFits(paths));
  ThemeAnchorOptions options;
  options.min_active = absl::GetFlag(FLAGS_min_active);
  options.min_persistence = absl::GetFlag(FLAGS_min_persistence);
  options.min_reach = absl::GetFlag(FLAGS_min_reach);
  options.max_sink_share = absl::GetFlag(FLAGS_max_sink_share);
  options.permutations = absl::GetFlag(FLAGS_permutations);
  options.local_keys = absl::GetFlag(FLAGS_local_keys);
  options.sequence_length = absl::GetFlag(FLAGS_sequence_length);
  ASSIGN_OR_RETURN(const ThemeAnchorTables tables,
                   FindThemeAnchors(base, *tok, domains, fits, options));
  const std::string dir = absl::GetFlag(FLAGS_out_dir);
  return StagedOutputs().WriteFilesAndCommit(
      dir, {{"theme_anchors.csv", tables.heads},
            {"theme_anchor_summary.csv", tables.summary},
            {"theme_anchor_examples.txt", tables.examples}});
}

}  // namespace
}  // namespace sparse_layers::analysis

int main(int argc, char** argv) {
  const std::vector<std::string> fits = sparse_layers::InitMain(
      argc, argv, "Theme-anchor Lorsa heads, the corpus's sources as topics.");
  return sparse_layers::RunMain(
      [&] { return sparse_layers::analysis::Run(fits); });
}
