#include "analysis/scaling/unigram_baseline.h"

#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/common/status_macros.h"

namespace sparse_layers::analysis {

absl::StatusOr<std::vector<int64_t>> TokenCounts(
    const std::vector<TokenIds>& shards, int64_t vocab_size) {
  if (vocab_size <= 0)
    return absl::InvalidArgumentError("vocabulary size must be positive");
  std::vector<int64_t> counts(vocab_size, 0);
  for (const TokenIds& ids : shards) {
    for (size_t i = 0; i < ids.size(); ++i) {
      const int64_t id = ids[i];
      if (id < 0 || id >= vocab_size) {
        return absl::InvalidArgumentError(absl::StrCat(
            "token id ", id, " outside the vocabulary of ", vocab_size));
      }
      ++counts[id];
    }
  }
  return counts;
}

absl::StatusOr<double> UnigramCrossEntropy(
    const std::vector<int64_t>& train_counts,
    const std::vector<int64_t>& validation_counts) {
  if (train_counts.size() != validation_counts.size() || train_counts.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("unigram: vocabularies of ", train_counts.size(), " and ",
                     validation_counts.size(), " ids"));
  }
  double train_total = 0, validation_total = 0, log_likelihood = 0;
  for (int64_t c : train_counts) train_total += c;
  const double denominator = train_total + train_counts.size();
  for (size_t v = 0; v < validation_counts.size(); ++v) {
    if (validation_counts[v] == 0) continue;
    validation_total += validation_counts[v];
    log_likelihood +=
        validation_counts[v] * std::log((train_counts[v] + 1.0) / denominator);
  }
  if (validation_total == 0)
    return absl::InvalidArgumentError("unigram: no validation tokens");
  return -log_likelihood / validation_total;
}

absl::StatusOr<double> UnigramCrossEntropy(const TokenShardSet& train,
                                           const TokenShardSet& validation) {
  if (train.manifest().vocab_size() != validation.manifest().vocab_size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("unigram: training split has a vocabulary of ",
                     train.manifest().vocab_size(), ", validation ",
                     validation.manifest().vocab_size()));
  }
  auto shards = [](const TokenShardSet& set) {
    std::vector<TokenIds> out;
    for (int i = 0; i < set.shard_count(); ++i) out.push_back(set.shard(i));
    return out;
  };
  ASSIGN_OR_RETURN(auto train_counts,
                   TokenCounts(shards(train), train.manifest().vocab_size()));
  ASSIGN_OR_RETURN(
      const auto validation_counts,
      TokenCounts(shards(validation), validation.manifest().vocab_size()));
  return UnigramCrossEntropy(train_counts, validation_counts);
}

}  // namespace sparse_layers::analysis
