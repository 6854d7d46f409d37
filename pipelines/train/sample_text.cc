#include "pipelines/train/sample_text.h"

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/common/status_macros.h"
#include "google/protobuf/repeated_field.h"

namespace sparse_layers::train {
namespace {

absl::StatusOr<std::string> Decode(
    const google::protobuf::RepeatedField<int64_t>& ids,
    const datasets::Tokenizer& tokenizer, const std::string& run) {
  std::vector<int> pieces;
  for (int64_t id : ids) {
    if (id < 0 || id >= tokenizer.vocab_size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          run, ": sample token id ", id, " is outside the tokenizer's ",
          tokenizer.vocab_size(), "-piece vocabulary"));
    }
    pieces.push_back(static_cast<int>(id));
  }
  return tokenizer.Decode(pieces);
}

}  // namespace

absl::StatusOr<std::string> SampleText(const TrainingSummary& summary,
                                       const datasets::Tokenizer& tokenizer) {
  if (summary.sample_ids().empty()) {
    return absl::StrCat(summary.name(),
                        ": no sample (eval.sample_tokens is 0)\n");
  }
  ASSIGN_OR_RETURN(const std::string prompt, Decode(summary.sample_prompt_ids(),
                                                    tokenizer, summary.name()));
  ASSIGN_OR_RETURN(const std::string continuation,
                   Decode(summary.sample_ids(), tokenizer, summary.name()));
  return absl::StrCat(prompt, "|", continuation, "\n");
}

}  // namespace sparse_layers::train
