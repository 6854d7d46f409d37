#include "datasets/text/shard_pairing.h"

#include "absl/strings/str_cat.h"
#include "base/common/digest.h"
#include "base/common/status_macros.h"
#include "datasets/text/tokenizer.h"

namespace sparse_layers::datasets {

absl::Status CheckEncodedWith(const TokenShardSet& tokens,
                              const std::string& tokenizer_path) {
  ASSIGN_OR_RETURN(const std::string digest,
                   Sha256OfFile(TokenizerDigestPath(tokenizer_path)));
  const std::string& recorded = tokens.manifest().tokenizer_sha256();
  if (recorded == digest) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      tokens.manifest_path(), " was encoded with the tokenizer of SHA-256 ",
      recorded.empty() ? "(none recorded)" : recorded.substr(0, 12) + "...",
      ", not with ", tokenizer_path, " (", digest.substr(0, 12), "...)"));
}

absl::Status CheckFitsModelVocabulary(const TokenShardSet& tokens,
                                      int64_t model_vocab_size,
                                      absl::string_view model) {
  const int64_t vocabulary = tokens.manifest().vocab_size();
  if (vocabulary <= model_vocab_size) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat(tokens.manifest_path(), " holds ids of a ", vocabulary,
                   "-piece vocabulary, but ", model, " embeds only ",
                   model_vocab_size, " (a model of another tokenizer)"));
}

}  // namespace sparse_layers::datasets
