#include "datasets/text/domain_documents.h"

#include <algorithm>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/common/status_macros.h"
#include "datasets/text/corpus_readers.h"

namespace sparse_layers::datasets {

absl::StatusOr<std::vector<DomainTokens>> DomainHalves(
    absl::string_view jsonl, const Tokenizer& tokenizer,
    int64_t tokens_per_domain) {
  const size_t per_half = static_cast<size_t>(tokens_per_domain / 2);
  // At most this many tokens of one document (and its eos), so a half spans
  // about 8 documents or more.
  const size_t per_document = std::max<size_t>(1, per_half / 8);
  // Each source's documents in a fixed pseudo-random order (FNV-1a of id and
  // text), not file order: neighbouring files (one press genre, one era of
  // addresses) would make the two halves alike.
  std::map<std::string, std::vector<std::pair<uint64_t, Document>>> by_source;
  for (absl::string_view line :
       absl::StrSplit(jsonl, '\n', absl::SkipEmpty())) {
    ASSIGN_OR_RETURN(Document document, ParseJsonDocument(line));
    if (document.source().empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("document '", document.id(), "' has no source"));
    }
    uint64_t hash = 14695981039346656037ull;
    for (const char c : absl::StrCat(document.id(), "\n", document.text())) {
      hash = (hash ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    }
    by_source[document.source()].emplace_back(hash, std::move(document));
  }
  std::vector<DomainTokens> domains;
  for (auto& [source, documents] : by_source) {
    std::sort(documents.begin(), documents.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    DomainTokens domain;
    domain.domain = source;
    for (size_t i = 0; i < documents.size(); ++i) {
      std::vector<int>& half = domain.halves[i % 2];
      if (half.size() >= per_half) continue;
      std::vector<int> ids = tokenizer.Encode(documents[i].second.text());
      if (ids.size() > per_document) ids.resize(per_document);
      half.insert(half.end(), ids.begin(), ids.end());
      half.push_back(tokenizer.eos_id());
      if (half.size() > per_half) half.resize(per_half);
    }
    domains.push_back(std::move(domain));
  }
  return domains;
}

}  // namespace sparse_layers::datasets
