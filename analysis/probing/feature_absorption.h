// Feature absorption on the first-letter task (Chanin et al. 2024,
// arXiv:2409.14507, with the absorption fraction of SAEBench, Karvonen et al.
// 2025, arXiv:2503.09532 Sec. 3): does an SAE latent that reads "starts with
// L" stay silent on some L-words while a latent of the word itself carries the
// letter instead?
//
// 1. Words: the vocabulary's word-initial pieces spelling two or more ASCII
//    letters (one token each), labelled by their first letter; each is read at
//    its own position after a document break and ten other words' answers
//    (" {w} has the first letter: {W}" lines, SAEBench's template; examples
//    drawn without replacement), at the SAEs' site: the FFN output of their
//    block (SAEBench reads the residual stream).
// 2. A ground-truth probe per letter (one vs rest, class-balanced logistic) on
//    the base activations of the training words; a probe on shuffled labels is
//    its control (a letter the model does not carry cannot be absorbed).
// 3. Per SAE: an L1-penalised probe per letter on the codes ranks latents; the
//    top k (k = 1..max_k) each get a class-balanced logistic probe, and the
//    letter's main latents are the longest prefix whose test F1 keeps rising
//    by more than f1_jump (SAEBench's feature-split rule).
// 4. On each test word the probe calls correctly, the absorption fraction
//    (the share of the probe projection carried by up to max_absorbers other
//    latents aligned with the probe, when the main latents fall short) and
//    full absorption (main latents silent, one aligned latent carries at least
//    projection_share of it); per letter the mean over its probe true
//    positives, per SAE the mean over letters with any (SAEBench's main.py),
//    measured only when at least min_letters letters' probes exceed F1
//    min_probe_f1 (SAEBench's min_feats_for_eval and min_GT_probe_f1).
// Differences from SAEBench, for a reader comparing numbers: the probes train
// full-batch from zero (Adam, linear decay, no weight decay; SAEBench: 50
// epochs, exponential decay, weight decay, random init), and a latent's
// projection is its activation times its decoder row's projection on the
// probe (SAEBench's activation x cosine, equal for unit rows; ours are unit at
// each step's start). mean_recovered_projection, the share of the probe
// projection all latents together carry, shows how far reconstruction alone
// limits the absorption fraction at small K.
#ifndef SPARSE_LAYERS_ANALYSIS_PROBING_FEATURE_ABSORPTION_H_
#define SPARSE_LAYERS_ANALYSIS_PROBING_FEATURE_ABSORPTION_H_

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "analysis/probing/unit_probing.h"
#include "datasets/text/tokenizer.h"
#include "models/gpt.h"

namespace sparse_layers::analysis {

inline constexpr int kLetters = 26;

struct AbsorptionOptions {
  std::string base_name = "base";
  // Words kept (smallest SHA-256 first: a uniform sample without a seed).
  int max_words = 3000;
  int icl_examples = 10;  // SAEBench's max_icl_examples.
  int max_k = 10;         // Largest k-sparse probe (SAEBench's max_k_value).
  double f1_jump = 0.03;  // SAEBench's f1_jump_threshold.
  // Absorption is measured when at least min_letters letters' ground-truth
  // probes exceed this test F1 (SAEBench's min_GT_probe_f1 and
  // min_feats_for_eval).
  double min_probe_f1 = 0.6;
  int min_letters = 20;
  // A latent counts toward the absorption fraction when its decoder row's
  // cosine with the probe reaches this (SAEBench 0.1), toward full
  // absorption at 0.025; both need projection_share of the probe projection.
  double absorber_cosine = 0.1;
  double full_absorber_cosine = 0.025;
  double projection_share = 0.4;
  int max_absorbers = 3;
  double l1_decay = 0.01;  // The latent-ranking probe's L1 (SAEBench 0.01).
  int probe_steps = 200;   // Full-batch Adam steps of each letter probe.
  // Resamples the train/test split of the words (SplitPartOf) and draws the
  // shuffled-label control.
  uint64_t seed = 42;
};

struct FirstLetterWord {
  int id = 0;
  std::string word;
  int letter = 0;  // 0 = 'a'.
};

// Word-initial pieces spelling >= 2 ASCII letters that EncodeWord turns into
// exactly that id, the max_words with the smallest SHA-256 of the word, in
// that order.
std::vector<FirstLetterWord> FirstLetterWords(
    const datasets::Tokenizer& tokenizer, int max_words);

// Token ids of words[index]'s prompt: the document break (bos, else eos),
// `examples` other words drawn without replacement from a hash of the word
// (every seed reads the same prompts) as " {w} has the first letter: {W}"
// lines, then the word's own id, read at the last position.
std::vector<int> FirstLetterPrompt(const datasets::Tokenizer& tokenizer,
                                   const std::vector<FirstLetterWord>& words,
                                   size_t index, int examples);

// One-vs-rest logistic probes, logits x weight^T + bias.
struct LetterProbes {
  torch::Tensor weight;  // (letters, features)
  torch::Tensor bias;    // (letters)
};

// Each letter's probe minimises class-balanced binary cross-entropy (its
// positives weighted n_negative / n_positive) plus l1_decay times the mean
// over letters of |weight| summed (SAEBench's k-sparse ranking probe; 0 for
// the ground-truth probe), by `steps` full-batch Adam steps (lr 0.01 decaying
// linearly to 1e-5), from zero. x: (n, features), letters: (n) int64.
LetterProbes FitLetterProbes(const torch::Tensor& x,
                             const torch::Tensor& letters, int letter_count,
                             double l1_decay, int steps);

// A k-feature logistic regression as sklearn's LogisticRegression(
// class_weight='balanced', C=1): minimises 0.5 |w|^2 + sum_i s_i
// log(1 + exp(-t_i (w . x_i + b))), s_i = n / (2 n_class), by Newton's method
// in float64 (FitBalancedLogistic's objective with k features).
struct MultiLogisticFit {
  torch::Tensor weight;  // (k) float64
  double bias = 0;
};
MultiLogisticFit FitBalancedLogisticOnFeatures(const torch::Tensor& x,
                                               const torch::Tensor& labels);

// The number of main latents: the largest k such that F1 rose by more than
// `jump` at every step from k = 1 (f1_by_k[0] is k = 1's).
int MainLatentCount(const std::vector<double>& f1_by_k, double jump);

struct WordAbsorption {
  double fraction = 0;
  bool full = false;
  // Sum over latents of their projections, over the probe projection.
  double recovered = 0;
};

// One word's absorption (SAEBench's FeatureAbsorptionCalculator): codes (U),
// cosines of the decoder rows with the unit probe direction (U, for the
// thresholds), the rows' projections on it (U, for the shares), the main
// latents and the projection of the activation on that direction.
WordAbsorption AbsorptionOfWord(const torch::Tensor& codes,
                                const torch::Tensor& probe_cosines,
                                const torch::Tensor& decoder_projections,
                                const std::vector<int64_t>& main_latents,
                                double probe_projection,
                                const AbsorptionOptions& options);

// The words' activations at the block's FFN output, (words, d_model).
torch::Tensor FirstLetterActivations(layers::GptImpl& base,
                                     const datasets::Tokenizer& tokenizer,
                                     const std::vector<FirstLetterWord>& words,
                                     int block, int examples);

struct AbsorptionTables {
  // One row per SAE; its means are NaN, and `measured` 0, below the gate
  // (fewer than min_letters letters probed; claims read measured = 1 only).
  std::string summary;
  std::string letters;  // One row per (SAE, letter).
};

extern const char kAbsorptionHeader[];
extern const char kAbsorptionLettersHeader[];

// The tables for SAEs on the FFN output of one block (on_output fits with a
// decoder); fails on any other fit and on fits of different blocks.
absl::StatusOr<AbsorptionTables> MeasureAbsorption(
    layers::GptImpl& base, const datasets::Tokenizer& tokenizer,
    const std::vector<ProbedFit>& fits, const AbsorptionOptions& options);

// The tables from the words' activations (the part after the base model).
absl::StatusOr<AbsorptionTables> AbsorptionOfActivations(
    const std::vector<FirstLetterWord>& words, const torch::Tensor& activations,
    const std::vector<ProbedFit>& fits, const AbsorptionOptions& options);

}  // namespace sparse_layers::analysis

#endif  // SPARSE_LAYERS_ANALYSIS_PROBING_FEATURE_ABSORPTION_H_
