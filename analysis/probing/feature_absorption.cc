#include "analysis/probing/feature_absorption.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "analysis/probing/sparse_probing.h"
#include "base/common/digest.h"
#include "layers/replacement/sparse_replacement.h"
#include "ops/hooks/hook_point.h"

namespace sparse_layers::analysis {

const char kAbsorptionHeader[] =
    "base,seed,fit,method,k,sparsity_penalty,units,words,letters_probe_ok,"
    "letters_evaluated,mean_absorption_fraction,full_absorption_rate,"
    "mean_main_latents,mean_recovered_projection,probe_f1,shuffled_probe_f1,"
    "probe_f1_gain,measured\n";
const char kAbsorptionLettersHeader[] =
    "base,seed,fit,method,k,sparsity_penalty,letter,train_words,test_words,"
    "probe_f1,shuffled_probe_f1,probe_ok,main_latents,main_latent_f1,"
    "probe_true_positives,mean_absorption_fraction,full_absorption_rate,"
    "mean_recovered_projection\n";

namespace {

constexpr double kEps = 1e-8;  // SAEBench's "did not fire".

// A uniform 64-bit draw from a string, stable across runs and builds.
uint64_t HashOf(const std::string& text) {
  return std::stoull(Sha256Hex(text).substr(0, 16), nullptr, 16);
}

bool IsAsciiWord(const std::string& word) {
  if (word.size() < 2) return false;
  for (const char c : word) {
    if (!std::isalpha(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

torch::Tensor RowsOf(const torch::Tensor& t, const std::vector<int64_t>& rows) {
  return t.index_select(0, torch::tensor(rows, torch::kLong));
}

// The SAE's dense codes of y, (n, units), whatever its sparsity rule.
torch::Tensor DenseCodesOf(layers::SparseReplacementImpl& layer,
                           const torch::Tensor& y) {
  std::vector<torch::Tensor> codes;
  layers::HookPoint hidden;
  hidden.Add(layers::CaptureHook(&codes));
  torch::NoGradGuard no_grad;
  layer.Forward(y, hidden);
  return codes.at(0).reshape({y.size(0), -1});
}

std::string Penalty(double value) { return absl::StrFormat("%g", value); }

}  // namespace

std::vector<FirstLetterWord> FirstLetterWords(
    const datasets::Tokenizer& tokenizer, int max_words) {
  std::vector<std::pair<std::string, FirstLetterWord>> keyed;
  for (int id = 0; id < tokenizer.vocab_size(); ++id) {
    const std::string word = tokenizer.WordOfPiece(id);
    if (!IsAsciiWord(word) || tokenizer.EncodeWord(word) != std::vector{id}) {
      continue;
    }
    const int letter = std::tolower(static_cast<unsigned char>(word[0])) - 'a';
    keyed.push_back({Sha256Hex(word), {id, word, letter}});
  }
  std::sort(keyed.begin(), keyed.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  if (static_cast<int>(keyed.size()) > max_words) keyed.resize(max_words);
  std::vector<FirstLetterWord> words;
  for (auto& [key, word] : keyed) words.push_back(std::move(word));
  return words;
}

std::vector<int> FirstLetterPrompt(const datasets::Tokenizer& tokenizer,
                                   const std::vector<FirstLetterWord>& words,
                                   size_t index, int examples) {
  std::mt19937_64 draw(HashOf("icl:" + words[index].word));
  // Other words, drawn without replacement (SAEBench's random.sample).
  std::vector<size_t> others;
  for (size_t i = 0; i < words.size(); ++i) {
    if (i != index) others.push_back(i);
  }
  const size_t count = std::min<size_t>(std::max(examples, 0), others.size());
  for (size_t e = 0; e < count; ++e) {
    std::swap(others[e], others[e + draw() % (others.size() - e)]);
  }
  // Each word after a space, as the queried word-initial piece is read.
  std::string text;
  for (size_t e = 0; e < count; ++e) {
    const std::string& w = words[others[e]].word;
    absl::StrAppend(&text, " ", w, " has the first letter: ",
                    std::string(1, static_cast<char>(std::toupper(
                                       static_cast<unsigned char>(w[0])))),
                    "\n");
  }
  // After a document break, as the model saw documents in training.
  std::vector<int> ids = {tokenizer.bos_id() >= 0 ? tokenizer.bos_id()
                                                  : tokenizer.eos_id()};
  if (!text.empty()) {
    const std::vector<int> encoded = tokenizer.Encode(text);
    ids.insert(ids.end(), encoded.begin(), encoded.end());
  }
  ids.push_back(words[index].id);
  return ids;
}

LetterProbes FitLetterProbes(const torch::Tensor& x,
                             const torch::Tensor& letters, int letter_count,
                             double l1_decay, int steps) {
  torch::NoGradGuard outer;
  const torch::Tensor features = x.to(torch::kFloat).detach();
  const torch::Tensor targets =
      torch::one_hot(letters.to(torch::kLong), letter_count).to(torch::kFloat);
  const torch::Tensor positives = targets.sum(0);
  const torch::Tensor negatives = targets.size(0) - positives;
  // Class balance: a letter's positives weigh as much as its negatives.
  const torch::Tensor positive_weight =
      torch::where(positives > 0, negatives / positives.clamp_min(1),
                   torch::ones_like(positives));
  torch::Tensor weight =
      torch::zeros({letter_count, features.size(1)}).requires_grad_(true);
  torch::Tensor bias = torch::zeros({letter_count}).requires_grad_(true);
  torch::optim::Adam adam({weight, bias}, torch::optim::AdamOptions(0.01));
  for (int step = 0; step < steps; ++step) {
    const double lr =
        0.01 + (1e-5 - 0.01) * step / std::max(1, steps - 1);  // Linear decay.
    for (auto& group : adam.param_groups()) {
      static_cast<torch::optim::AdamOptions&>(group.options()).lr(lr);
    }
    torch::AutoGradMode enable(true);
    adam.zero_grad();
    const torch::Tensor logits = features.matmul(weight.t()) + bias;
    torch::Tensor loss = torch::binary_cross_entropy_with_logits(
        logits, targets, {}, positive_weight, at::Reduction::Mean);
    if (l1_decay > 0) loss = loss + l1_decay * weight.abs().sum(1).mean();
    loss.backward();
    adam.step();
  }
  return {weight.detach(), bias.detach()};
}

MultiLogisticFit FitBalancedLogisticOnFeatures(const torch::Tensor& x,
                                               const torch::Tensor& labels) {
  const int64_t n = x.size(0), k = x.size(1);
  MultiLogisticFit fit{torch::zeros({k}, torch::kDouble), 0};
  const torch::Tensor t = labels.to(torch::kBool);
  const int64_t n_positive = t.sum().item<int64_t>();
  if (n_positive == 0 || n_positive == n) return fit;
  // Features then a column of ones (the unpenalised intercept).
  const torch::Tensor design = torch::cat(
      {x.to(torch::kDouble), torch::ones({n, 1}, torch::kDouble)}, 1);
  const torch::Tensor sign = t.to(torch::kDouble) * 2 - 1;
  const torch::Tensor sample_weight = torch::where(
      t, torch::full({n}, n / (2.0 * n_positive), torch::kDouble),
      torch::full({n}, n / (2.0 * (n - n_positive)), torch::kDouble));
  torch::Tensor penalty = torch::ones({k + 1}, torch::kDouble);
  penalty[k] = 0;  // Intercept unpenalised.
  // The objective: 0.5 |w|^2 + sum_i s_i softplus(-t_i z_i).
  const auto objective = [&](const torch::Tensor& w) {
    return (0.5 * (penalty * w * w).sum() +
            (sample_weight * torch::softplus(-sign * design.matmul(w))).sum())
        .item<double>();
  };
  torch::Tensor w = torch::zeros({k + 1}, torch::kDouble);
  double value = objective(w);
  for (int iteration = 0; iteration < 100; ++iteration) {
    const torch::Tensor p = torch::sigmoid(-sign * design.matmul(w));
    const torch::Tensor g = -sample_weight * sign * p;
    const torch::Tensor h = sample_weight * p * (1 - p);
    const torch::Tensor gradient = design.t().matmul(g) + penalty * w;
    // 1e-12 on the intercept's diagonal keeps a separable class solvable.
    const torch::Tensor hessian = design.t().matmul(design * h.unsqueeze(1)) +
                                  torch::diag(penalty.clamp_min(1e-12));
    const torch::Tensor delta =
        torch::linalg_solve(hessian, gradient.unsqueeze(1)).squeeze(1);
    if (!torch::isfinite(delta).all().item<bool>()) break;
    // Newton's step, halved until the objective falls (rare classes weigh
    // up to n / 2 per sample, where a full step can overshoot).
    double step = 1;
    torch::Tensor next = w - delta;
    double next_value = objective(next);
    for (int halving = 0; halving < 30 && !(next_value <= value); ++halving) {
      step /= 2;
      next = w - step * delta;
      next_value = objective(next);
    }
    if (!(next_value <= value)) break;
    const double moved = step * delta.abs().sum().item<double>();
    w = next;
    value = next_value;
    if (moved < 1e-10 * (1 + w.abs().sum().item<double>())) break;
  }
  fit.weight = w.slice(0, 0, k).clone();
  fit.bias = w[k].item<double>();
  return fit;
}

int MainLatentCount(const std::vector<double>& f1_by_k, double jump) {
  double best = -100;
  int count = 0;
  for (size_t k = 0; k < f1_by_k.size(); ++k) {
    if (!(f1_by_k[k] > best + jump)) break;
    best = f1_by_k[k];
    count = static_cast<int>(k) + 1;
  }
  return count;
}

WordAbsorption AbsorptionOfWord(const torch::Tensor& codes,
                                const torch::Tensor& probe_cosines,
                                const torch::Tensor& decoder_projections,
                                const std::vector<int64_t>& main_latents,
                                double probe_projection,
                                const AbsorptionOptions& options) {
  const torch::Tensor a = codes.to(torch::kDouble);
  const torch::Tensor cosines = probe_cosines.to(torch::kDouble);
  // Each latent's share of the probe projection: its activation times its
  // decoder row's projection on the probe (SAEBench's activation x cosine for
  // unit rows).
  const torch::Tensor projections = a * decoder_projections.to(torch::kDouble);
  const torch::Tensor main_index = torch::tensor(main_latents, torch::kLong);
  const double main_projection =
      projections.index_select(0, main_index).sum().item<double>();
  torch::Tensor others = torch::ones_like(a, torch::kBool);
  others.index_fill_(0, main_index, false);
  const torch::Tensor absorbers =
      others & (cosines >= options.absorber_cosine) & (projections > 0);
  const torch::Tensor absorber_projections =
      projections.masked_select(absorbers);
  const double absorbed =
      absorber_projections.numel() == 0
          ? 0.0
          : std::get<0>(
                absorber_projections.topk(std::min<int64_t>(
                    options.max_absorbers, absorber_projections.numel())))
                .sum()
                .item<double>();
  WordAbsorption result;
  result.recovered = projections.sum().item<double>() / probe_projection;
  if (main_projection >= probe_projection ||
      absorbed / probe_projection < options.projection_share) {
    result.fraction = 0;
  } else if (main_projection <= 0) {
    result.fraction = 1;
  } else {
    const double carried =
        std::min(absorbed, probe_projection - main_projection);
    result.fraction =
        std::clamp(carried / (carried + main_projection), 0.0, 1.0);
  }
  // Full absorption: every main latent silent and the single top-projecting
  // latent aligned with the probe and carrying projection_share of it.
  const bool main_silent =
      (a.index_select(0, main_index) < kEps).all().item<bool>();
  const int64_t top = projections.argmax().item<int64_t>();
  result.full = main_silent && probe_projection >= 0 &&
                cosines[top].item<double>() >= options.full_absorber_cosine &&
                projections[top].item<double>() / probe_projection >=
                    options.projection_share;
  return result;
}

torch::Tensor FirstLetterActivations(layers::GptImpl& base,
                                     const datasets::Tokenizer& tokenizer,
                                     const std::vector<FirstLetterWord>& words,
                                     int block, int examples) {
  std::vector<torch::Tensor> ys;
  base.FindHook(absl::StrCat("blocks.", block, ".ffn.hook_out"))
      ->Add(layers::CaptureHook(&ys));
  const absl::Cleanup clear_hooks = [&base] { base.ClearHooks(); };
  torch::NoGradGuard no_grad;
  const int64_t context = base.options().context_length;
  std::vector<torch::Tensor> rows;
  constexpr size_t kBatch = 32;
  for (size_t start = 0; start < words.size(); start += kBatch) {
    const size_t end = std::min(words.size(), start + kBatch);
    std::vector<std::vector<int>> prompts;
    size_t longest = 0;
    for (size_t i = start; i < end; ++i) {
      std::vector<int> ids = FirstLetterPrompt(tokenizer, words, i, examples);
      if (static_cast<int64_t>(ids.size()) > context) {
        ids.erase(ids.begin(), ids.end() - context);  // Keep the word.
      }
      longest = std::max(longest, ids.size());
      prompts.push_back(std::move(ids));
    }
    // Right-padded with the word itself: causal attention keeps each prompt's
    // last real position unaffected by what follows it.
    torch::Tensor tokens = torch::empty(
        {static_cast<int64_t>(prompts.size()), static_cast<int64_t>(longest)},
        torch::kLong);
    auto view = tokens.accessor<int64_t, 2>();
    std::vector<int64_t> last;
    for (size_t p = 0; p < prompts.size(); ++p) {
      for (size_t t = 0; t < longest; ++t) {
        view[p][t] = t < prompts[p].size() ? prompts[p][t] : prompts[p].back();
      }
      last.push_back(static_cast<int64_t>(prompts[p].size()) - 1);
    }
    ys.clear();
    base.Hidden(tokens);
    const torch::Tensor y = ys.at(0);
    rows.push_back(
        y.index({torch::arange(y.size(0)), torch::tensor(last, torch::kLong)}));
  }
  return torch::cat(rows).to(torch::kFloat);
}

absl::StatusOr<AbsorptionTables> AbsorptionOfActivations(
    const std::vector<FirstLetterWord>& words, const torch::Tensor& activations,
    const std::vector<ProbedFit>& fits, const AbsorptionOptions& options) {
  std::vector<int64_t> train_rows, test_rows;
  std::vector<int64_t> letter_ids;
  for (size_t i = 0; i < words.size(); ++i) {
    (SplitPartOf(options.seed, words[i].word) == SplitPart::kTest ? test_rows
                                                                  : train_rows)
        .push_back(static_cast<int64_t>(i));
    letter_ids.push_back(words[i].letter);
  }
  if (train_rows.empty() || test_rows.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the first-letter task needs training and test words; the vocabulary "
        "gave ",
        words.size(), " single-token words of two or more letters"));
  }
  const torch::Tensor letters = torch::tensor(letter_ids, torch::kLong);
  const torch::Tensor train_letters = RowsOf(letters, train_rows);
  const torch::Tensor test_letters = RowsOf(letters, test_rows);
  const torch::Tensor train_y = RowsOf(activations, train_rows);
  const torch::Tensor test_y = RowsOf(activations, test_rows);

  // Ground truth and its control: the same probe on shuffled letters.
  const LetterProbes probe = FitLetterProbes(train_y, train_letters, kLetters,
                                             0.0, options.probe_steps);
  std::mt19937_64 draw(HashOf(absl::StrCat("shuffle:", options.seed)));
  std::vector<int64_t> shuffled(
      train_letters.data_ptr<int64_t>(),
      train_letters.data_ptr<int64_t>() + train_letters.numel());
  std::shuffle(shuffled.begin(), shuffled.end(), draw);
  const LetterProbes shuffled_probe =
      FitLetterProbes(train_y, torch::tensor(shuffled, torch::kLong), kLetters,
                      0.0, options.probe_steps);
  const torch::Tensor probe_scores =
      test_y.matmul(probe.weight.t()) + probe.bias;  // (test, letters)
  const torch::Tensor shuffled_scores =
      test_y.matmul(shuffled_probe.weight.t()) + shuffled_probe.bias;
  std::vector<double> probe_f1(kLetters), shuffled_f1(kLetters);
  std::vector<int64_t> train_count(kLetters), test_count(kLetters);
  for (int l = 0; l < kLetters; ++l) {
    const torch::Tensor truth = test_letters == l;
    probe_f1[l] = F1Score(probe_scores.select(1, l) > 0, truth);
    shuffled_f1[l] = F1Score(shuffled_scores.select(1, l) > 0, truth);
    train_count[l] = (train_letters == l).sum().item<int64_t>();
    test_count[l] = truth.sum().item<int64_t>();
  }
  // The probes' mean test F1 over the letters present (every SAE's row).
  double probe_f1_mean = 0, shuffled_f1_mean = 0;
  int letters_present = 0;
  for (int l = 0; l < kLetters; ++l) {
    if (test_count[l] == 0) continue;
    ++letters_present;
    probe_f1_mean += probe_f1[l];
    shuffled_f1_mean += shuffled_f1[l];
  }
  probe_f1_mean /= std::max(1, letters_present);
  shuffled_f1_mean /= std::max(1, letters_present);
  // SAEBench's gate: enough letters whose probe finds them (F1 above
  // min_probe_f1), else no absorption is measured.
  int letters_probe_ok = 0;
  for (int l = 0; l < kLetters; ++l) {
    letters_probe_ok += probe_f1[l] > options.min_probe_f1;
  }
  const bool measured = letters_probe_ok >= options.min_letters;
  const torch::Tensor probe_directions =
      probe.weight / probe.weight.norm(2, 1, true).clamp_min(1e-12);
  // Projection of every test activation on every letter's unit direction.
  const torch::Tensor test_projections =
      test_y.to(torch::kDouble).matmul(probe_directions.to(torch::kDouble).t());

  AbsorptionTables tables{kAbsorptionHeader, kAbsorptionLettersHeader};
  int block = -1;
  for (const ProbedFit& fit : fits) {
    auto* sae = dynamic_cast<layers::SaeImpl*>(fit.layer.get());
    if (sae == nullptr || !fit.spec.on_output()) {
      return absl::InvalidArgumentError(absl::StrCat(
          fit.path, " is a ", fit.spec.ffn(),
          ": feature absorption reads SAEs on the FFN output (their decoder "
          "rows live where the probe does)"));
    }
    if (block >= 0 && fit.spec.layer() != block) {
      return absl::InvalidArgumentError(absl::StrCat(
          fit.path, " reads block ", fit.spec.layer(), ", not ", block));
    }
    block = fit.spec.layer();
    sae->eval();
    const torch::Tensor train_codes = DenseCodesOf(*sae, train_y);
    const torch::Tensor test_codes = DenseCodesOf(*sae, test_y);
    const LetterProbes ranking =
        FitLetterProbes(train_codes, train_letters, kLetters, options.l1_decay,
                        options.probe_steps);
    const torch::Tensor decoder = sae->decoder.detach();
    // Each decoder row's projection on each letter's unit direction and its
    // cosine with it, (letters, units).
    const torch::Tensor decoder_projections =
        probe_directions.matmul(decoder.t());
    const torch::Tensor cosines =
        decoder_projections / decoder.norm(2, 1).clamp_min(1e-12).unsqueeze(0);
    const std::string prefix =
        absl::StrCat(options.base_name, ",", options.seed, ",", fit.name, ",",
                     fit.spec.ffn(), ",", fit.spec.top_k(), ",",
                     Penalty(fit.spec.sparsity_penalty()), ",");
    double fraction_sum = 0, full_sum = 0, main_sum = 0, recovered_sum = 0;
    int evaluated = 0;
    for (int l = 0; l < kLetters; ++l) {
      if (train_count[l] == 0 || test_count[l] == 0) continue;
      const torch::Tensor train_truth = train_letters == l;
      const torch::Tensor test_truth = test_letters == l;
      // k-sparse probes on the latents the L1 probe weighs most (positive
      // weights: latents that predict the letter, SAEBench's topk).
      const int64_t max_k = std::min<int64_t>(options.max_k, sae->units());
      const torch::Tensor ranked = std::get<1>(ranking.weight[l].topk(max_k));
      std::vector<double> f1_by_k;
      for (int64_t k = 1; k <= max_k; ++k) {
        const torch::Tensor chosen = ranked.slice(0, 0, k);
        const MultiLogisticFit k_fit = FitBalancedLogisticOnFeatures(
            train_codes.index_select(1, chosen), train_truth);
        const torch::Tensor predicted = test_codes.index_select(1, chosen)
                                                .to(torch::kDouble)
                                                .matmul(k_fit.weight) +
                                            k_fit.bias >
                                        0;
        f1_by_k.push_back(F1Score(predicted, test_truth));
      }
      const int main_count = MainLatentCount(f1_by_k, options.f1_jump);
      const torch::Tensor main_tensor = ranked.slice(0, 0, main_count);
      const std::vector<int64_t> main_latents(
          main_tensor.data_ptr<int64_t>(),
          main_tensor.data_ptr<int64_t>() + main_count);
      // The probe's true positives among the letter's test words.
      int64_t true_positives = 0;
      double letter_fraction = 0, letter_full = 0, letter_recovered = 0;
      for (size_t j = 0; j < test_rows.size(); ++j) {
        if (test_letters[j].item<int64_t>() != l ||
            !(probe_scores[j][l].item<double>() > 0)) {
          continue;
        }
        ++true_positives;
        const WordAbsorption word = AbsorptionOfWord(
            test_codes[j], cosines[l], decoder_projections[l], main_latents,
            test_projections[j][l].item<double>(), options);
        letter_fraction += word.fraction;
        letter_full += word.full;
        letter_recovered += word.recovered;
      }
      const double mean_fraction =
          true_positives > 0 ? letter_fraction / true_positives : 0;
      const double full_rate =
          true_positives > 0 ? letter_full / true_positives : 0;
      const double recovered =
          true_positives > 0 ? letter_recovered / true_positives : 0;
      absl::StrAppend(
          &tables.letters, prefix, std::string(1, static_cast<char>('a' + l)),
          ",", train_count[l], ",", test_count[l], ",",
          absl::StrFormat("%.6g,%.6g,", probe_f1[l], shuffled_f1[l]),
          probe_f1[l] > options.min_probe_f1 ? 1 : 0, ",", main_count, ",",
          absl::StrFormat("%.6g", main_count > 0 ? f1_by_k[main_count - 1] : 0),
          ",", true_positives, ",",
          absl::StrFormat("%.6g,%.6g,%.6g\n", mean_fraction, full_rate,
                          recovered));
      // SAEBench's means run over the letters with probe true positives.
      if (true_positives == 0) continue;
      ++evaluated;
      fraction_sum += mean_fraction;
      full_sum += full_rate;
      main_sum += main_count;
      recovered_sum += recovered;
    }
    const bool fit_measured = measured && evaluated > 0;
    const auto mean_or_nan = [&](double sum) {
      return fit_measured ? sum / evaluated : std::nan("");
    };
    absl::StrAppend(
        &tables.summary, prefix, sae->units(), ",", words.size(), ",",
        letters_probe_ok, ",", evaluated, ",",
        absl::StrFormat("%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%d\n",
                        mean_or_nan(fraction_sum), mean_or_nan(full_sum),
                        mean_or_nan(main_sum), mean_or_nan(recovered_sum),
                        probe_f1_mean, shuffled_f1_mean,
                        probe_f1_mean - shuffled_f1_mean,
                        fit_measured ? 1 : 0));
    std::fprintf(stderr,
                 "feature_absorption: %s: %d letters probed above F1 %.2f, %d "
                 "with probe true positives, mean absorption fraction %.4f\n",
                 fit.name.c_str(), letters_probe_ok, options.min_probe_f1,
                 evaluated, mean_or_nan(fraction_sum));
  }
  return tables;
}

absl::StatusOr<AbsorptionTables> MeasureAbsorption(
    layers::GptImpl& base, const datasets::Tokenizer& tokenizer,
    const std::vector<ProbedFit>& fits, const AbsorptionOptions& options) {
  if (fits.empty()) return absl::InvalidArgumentError("no SAE to measure");
  const int block = fits.front().spec.layer();
  if (block < 0 || block >= base.options().n_layers) {
    return absl::InvalidArgumentError(
        absl::StrCat(fits.front().path, " reads block ", block, " of a ",
                     base.options().n_layers, "-block model"));
  }
  const std::vector<FirstLetterWord> words =
      FirstLetterWords(tokenizer, options.max_words);
  if (words.size() < 2) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the tokenizer has ", words.size(),
        " single-token words of two or more ASCII letters: no first-letter "
        "task"));
  }
  std::fprintf(stderr,
               "feature_absorption: %zu single-token words of two or more "
               "letters\n",
               words.size());
  const torch::Tensor activations = FirstLetterActivations(
      base, tokenizer, words, block, options.icl_examples);
  return AbsorptionOfActivations(words, activations, fits, options);
}

}  // namespace sparse_layers::analysis
