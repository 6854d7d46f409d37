// Sparse probing of a base model's FFN units at one block and of replacement
// layers fitted there (MxD arXiv:2505.21364 Sec. 3.2.1, Fig. 4, Sec. B.5) on
// any labelled JSONL ({"text": ..., "label": ...}, optional metadata "group",
// and "pool": "last" for token-level examples).
//
// Each text is cut to its first max_tokens tokens (its last ones for
// token-level examples) and run through the base model once; the block's FFN
// input x and output y are captured, and every method's unit activations are
// mean-pooled over the text's tokens (document-level tasks, the paper's) or
// read at the last token (token-level tasks, the CSV's granularity); affine
// units (pre-codes, the random projection) encode the pooled x or y, which is
// the same mean (texts run in padded batches of kPooledTextsPerBatch):
//   mlp_neurons  the base FFN's hidden units;
//   <fit name>   a replacement layer's pre-activations (TC/STC encoder, MxD
//                gate logits, SAE encoder on y);
//   random       a random projection of x drawn from the seed, with as many
//                units as the widest layer (control).
// Texts are split 80/20 by a hash of (seed, group) (train/test); for every
// class (one vs all) the paper's variant (units chosen and best taken on
// test) and the leakage-free variant (train split 75/25 into fit and
// validation, the unit chosen on validation) are reported, one CSV row per
// (task, class, method), each with the seed in a `seed` column.
#ifndef SPARSE_LAYERS_ANALYSIS_PROBING_UNIT_PROBING_H_
#define SPARSE_LAYERS_ANALYSIS_PROBING_UNIT_PROBING_H_

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "config/experiment.pb.h"
#include "datasets/text/tokenizer.h"
#include "layers/replacement/sparse_replacement.h"
#include "models/gpt.h"

namespace sparse_layers::analysis {

// A fitted replacement layer, probed beside the base model's neurons.
struct ProbedFit {
  std::string path;             // Its checkpoint (named in errors).
  std::string name;             // Its config name: the CSV's method.
  config::FfnReplacement spec;  // Its block, registry name and site.
  std::shared_ptr<layers::SparseReplacementImpl> layer;
};

// The fits at `paths`, in order; only each one's replacement layer is kept.
absl::StatusOr<std::vector<ProbedFit>> LoadProbedFits(
    const std::vector<std::string>& paths);

struct UnitProbingOptions {
  std::vector<std::string> data;   // Labelled JSONL, a task each (its stem).
  std::string base_name = "base";  // The base model's name in the CSV.
  int layer = -1;        // Block probed (-1: the fits', else 2/3 deep).
  int max_tokens = 127;  // Tokens per text (MxD Sec. B.5).
  int candidates = 100;  // Units fitted per class (top mean difference).
  uint64_t seed = 42;    // The random control, the splits and the CSV's seed.
};

struct ProbeMethod {
  std::string name;
  std::string layer_kind;  // Registry name, "mlp_neurons" or "random".
  std::shared_ptr<layers::SparseReplacementImpl> layer;
  bool on_output = false;
};

// What is probed: the block, the methods (mlp_neurons, the fits in order,
// random) and the random control's directions, (d_model, units).
struct ProbedBlock {
  int block = -1;
  std::vector<ProbeMethod> methods;
  torch::Tensor random_directions;
};

// The block (options.layer, else the fits', else 2/3 of the depth) and its
// methods; the random directions are drawn under torch::manual_seed(seed),
// as many as the widest fit's units, at least 4 d_model. Fails on a fit of
// another block, a block the model lacks and an FFN without hooks.
absl::StatusOr<ProbedBlock> ProbedBlockOf(layers::GptImpl& base,
                                          const std::vector<ProbedFit>& fits,
                                          const UnitProbingOptions& options);

// The first 20% of groups by hash are test; of the rest, a quarter is the
// leakage-free variant's validation part. The seed is hashed in so that seeds
// resample the split (the paper's 80/20 shuffle, MxD Sec. B.5) as well.
enum class SplitPart { kFit, kValidation, kTest };
SplitPart SplitPartOf(uint64_t seed, const std::string& group);

// One task's texts of at least 5 tokens (as the paper's released probe
// script): labels, split parts (by metadata "group", else the text) and each
// method's pooled units, (texts, units); features are undefined without texts.
struct PooledTask {
  bool token_level = false;  // Some example is read at its last token.
  std::vector<std::string> labels;
  std::vector<SplitPart> parts;
  std::vector<torch::Tensor> features;  // Per method of the ProbedBlock.
};

// Texts per forward pass of the base model while pooling (sorted by length,
// padded to the batch's longest).
inline constexpr int64_t kPooledTextsPerBatch = 32;

absl::StatusOr<PooledTask> PoolUnits(layers::GptImpl& base,
                                     const datasets::Tokenizer& tokenizer,
                                     const ProbedBlock& probed,
                                     absl::string_view jsonl,
                                     const UnitProbingOptions& options);

// The tables' header lines.
extern const char kUnitProbingHeader[];
extern const char kUnitDensitiesHeader[];

// Bins of a best unit's activation densities (MxD Figs. 14-15, 17).
inline constexpr int kDensityBins = 20;

struct UnitProbingTables {
  // One row per (task, class, method).
  std::string probes;
  // Per (task, class, method): the paper-protocol best unit's activations on
  // the positive and the negative test texts, kDensityBins bins over their
  // range (range_position 0..1 and the bin's activation), each sample's share
  // of its texts per bin (MxD Figs. 14-15 document level, 17 token level); no
  // rows for a sample without test texts.
  std::string densities;
};

// Appends `task`'s rows, one per class (one vs all, sorted) and method, and
// returns the number of classes; none (0) with fewer than two classes.
int AppendProbeRows(const std::string& task, const PooledTask& pooled,
                    const ProbedBlock& probed,
                    const UnitProbingOptions& options,
                    UnitProbingTables& tables);

// The tables for every task of options.data (headers first); logs each probed
// task's text and class counts.
absl::StatusOr<UnitProbingTables> ProbeUnits(
    layers::GptImpl& base, const datasets::Tokenizer& tokenizer,
    const std::vector<ProbedFit>& fits, const UnitProbingOptions& options);

}  // namespace sparse_layers::analysis

#endif  // SPARSE_LAYERS_ANALYSIS_PROBING_UNIT_PROBING_H_
