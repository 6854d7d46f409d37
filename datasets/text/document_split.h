// The deterministic document-level split: a document's split depends only on
// its source and id (through SHA-256), so adding documents never moves others.
#ifndef SPARSE_LAYERS_DATASETS_TEXT_DOCUMENT_SPLIT_H_
#define SPARSE_LAYERS_DATASETS_TEXT_DOCUMENT_SPLIT_H_

#include <cstdint>
#include <map>
#include <string>

#include "absl/strings/string_view.h"
#include "datasets/text/corpus.pb.h"

namespace sparse_layers::datasets {

enum class Split { kTrain = 0, kValidation = 1, kTest = 2 };

absl::string_view SplitName(Split split);

struct SplitFractions {
  double validation = 0.05;
  double test = 0.05;
};

// A number in [0, 1) from SHA-256("<salt><source>/<id>"), uniform over
// documents; the split uses no salt, subsampling uses "sample:".
double DocumentHashUnit(const Document& document, absl::string_view salt = "");

// validation if u < validation, test if u < validation + test, else train.
Split AssignSplit(const Document& document, const SplitFractions& fractions);

// The rule as recorded in every manifest.
std::string SplitRuleDescription(const SplitFractions& fractions);

// Accumulates the counts of one split's manifest.
class SplitManifestBuilder {
 public:
  explicit SplitManifestBuilder(Split split) : split_(split) {}
  void Add(const Document& document);
  SplitManifest Build(const std::string& file, const std::string& sha256,
                      const SplitFractions& fractions) const;

 private:
  Split split_;
  int64_t documents_ = 0;
  int64_t bytes_ = 0;
  std::map<std::string, Count> sources_;
  std::map<std::string, Count> labels_;
};

}  // namespace sparse_layers::datasets

#endif  // SPARSE_LAYERS_DATASETS_TEXT_DOCUMENT_SPLIT_H_
