#include "datasets/text/document_split.h"

#include <cstdint>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/common/digest.h"

namespace sparse_layers::datasets {

absl::string_view SplitName(Split split) {
  switch (split) {
    case Split::kTrain:
      return "train";
    case Split::kValidation:
      return "validation";
    case Split::kTest:
      return "test";
  }
  return "";
}

double DocumentHashUnit(const Document& document, absl::string_view salt) {
  const std::string hex =
      Sha256Hex(absl::StrCat(salt, document.source(), "/", document.id()));
  uint64_t prefix = 0;
  absl::SimpleHexAtoi(hex.substr(0, 13),
                      &prefix);  // 52 bits: exact in a double.
  return static_cast<double>(prefix) / static_cast<double>(uint64_t{1} << 52);
}

Split AssignSplit(const Document& document, const SplitFractions& fractions) {
  const double unit = DocumentHashUnit(document);
  if (unit < fractions.validation) return Split::kValidation;
  if (unit < fractions.validation + fractions.test) return Split::kTest;
  return Split::kTrain;
}

std::string SplitRuleDescription(const SplitFractions& fractions) {
  return absl::StrFormat(
      "u = first 52 bits of sha256(source/id) / 2^52; validation if u < %g, "
      "test if u < %g, else train",
      fractions.validation, fractions.validation + fractions.test);
}

void SplitManifestBuilder::Add(const Document& document) {
  const int64_t bytes = static_cast<int64_t>(document.text().size());
  ++documents_;
  bytes_ += bytes;
  Count& source = sources_[document.source()];
  source.set_key(document.source());
  source.set_documents(source.documents() + 1);
  source.set_bytes(source.bytes() + bytes);
  if (!document.label().empty()) {
    Count& label = labels_[document.label()];
    label.set_key(document.label());
    label.set_documents(label.documents() + 1);
    label.set_bytes(label.bytes() + bytes);
  }
}

SplitManifest SplitManifestBuilder::Build(
    const std::string& file, const std::string& sha256,
    const SplitFractions& fractions) const {
  SplitManifest manifest;
  manifest.set_split(std::string(SplitName(split_)));
  manifest.set_file(file);
  manifest.set_documents(documents_);
  manifest.set_bytes(bytes_);
  for (const auto& [key, count] : sources_) *manifest.add_sources() = count;
  for (const auto& [key, count] : labels_) *manifest.add_labels() = count;
  manifest.set_sha256(sha256);
  manifest.set_split_rule(SplitRuleDescription(fractions));
  return manifest;
}

}  // namespace sparse_layers::datasets
