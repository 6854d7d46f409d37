// Held-out documents grouped by their corpus source (a domain), each domain
// split into two halves of documents, for the analyses that compare domains
// against the noise between two halves of one (MoHD arXiv:2412.05644 Fig. 11's
// routing by domain; Lorsa arXiv:2504.20938 Sec. 6.3's theme-anchor heads).
#ifndef SPARSE_LAYERS_DATASETS_TEXT_DOMAIN_DOCUMENTS_H_
#define SPARSE_LAYERS_DATASETS_TEXT_DOMAIN_DOCUMENTS_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "datasets/text/tokenizer.h"

namespace sparse_layers::datasets {

// One domain's held-out tokens: its documents, in a fixed pseudo-random order
// (a hash of id and text), dealt alternately into two halves, each half's
// documents encoded (at most 1/8 of a half each) and joined by eos.
struct DomainTokens {
  std::string domain;
  std::array<std::vector<int>, 2> halves;
};

// The documents of `jsonl` (corpus split JSONL) by "source", domains in name
// order, each half capped at tokens_per_domain / 2 tokens; a document without
// a source is an error.
absl::StatusOr<std::vector<DomainTokens>> DomainHalves(
    absl::string_view jsonl, const Tokenizer& tokenizer,
    int64_t tokens_per_domain);

}  // namespace sparse_layers::datasets

#endif  // SPARSE_LAYERS_DATASETS_TEXT_DOMAIN_DOCUMENTS_H_
