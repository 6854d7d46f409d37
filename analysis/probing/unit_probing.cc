#include "analysis/probing/unit_probing.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "analysis/probing/sparse_probing.h"
#include "base/common/digest.h"
#include "base/common/file_io.h"
#include "base/common/status_macros.h"
#include "datasets/text/corpus_readers.h"
#include "models/model_loader.h"
#include "ops/hooks/hook_point.h"

namespace sparse_layers::analysis {

const char kUnitProbingHeader[] =
    "base,task,granularity,class,method,layer_kind,units,test_positives,"
    "test_texts,"
    "best_f1,best_balanced_accuracy,best_unit,selected_f1,selected_unit,"
    "seed\n";

const char kUnitDensitiesHeader[] =
    "base,task,granularity,class,method,layer_kind,unit,seed,sample,"
    "range_position,activation,share\n";

absl::StatusOr<std::vector<ProbedFit>> LoadProbedFits(
    const std::vector<std::string>& paths) {
  ASSIGN_OR_RETURN(const std::vector<layers::LoadedReplacement> loaded,
                   layers::LoadReplacements(paths));
  std::vector<ProbedFit> fits;
  for (const layers::LoadedReplacement& fitted : loaded) {
    fits.push_back(
        {fitted.path, fitted.loaded.config.name(), fitted.spec, fitted.layer});
  }
  return fits;
}

absl::StatusOr<ProbedBlock> ProbedBlockOf(layers::GptImpl& base,
                                          const std::vector<ProbedFit>& fits,
                                          const UnitProbingOptions& options) {
  ProbedBlock probed;
  probed.methods = {{"mlp_neurons", "mlp_neurons", nullptr}};
  int layer = options.layer;
  int64_t widest = 0;
  for (const ProbedFit& fit : fits) {
    if (layer < 0) layer = fit.spec.layer();
    if (fit.spec.layer() != layer) {
      return absl::InvalidArgumentError(absl::StrCat(
          fit.path, " replaces block ", fit.spec.layer(), ", not ", layer));
    }
    probed.methods.push_back(
        {fit.name, fit.spec.ffn(), fit.layer, fit.spec.on_output()});
    widest = std::max(widest, fit.layer->units());
  }
  const int64_t n_layers = base.options().n_layers;
  if (layer < 0) layer = n_layers * 2 / 3;
  if (layer >= n_layers) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--layer ", layer, ": the base model has ", n_layers, " blocks"));
  }
  probed.block = layer;
  const int64_t d = base.options().d_model;
  torch::manual_seed(options.seed);
  probed.random_directions =
      torch::randn({d, std::max<int64_t>(widest, 4 * d)});
  probed.methods.push_back({"random", "random", nullptr});
  const std::string prefix = absl::StrCat("blocks.", layer, ".ffn.");
  for (const char* hook : {"hook_in", "hook_out", "hook_hidden"}) {
    if (base.FindHook(prefix + hook) == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("the base model has no hook ", prefix, hook));
    }
  }
  return probed;
}

SplitPart SplitPartOf(uint64_t seed, const std::string& group) {
  const std::string digest = Sha256Hex(absl::StrCat(seed, ":", group));
  const int bucket = std::stoi(digest.substr(0, 6), nullptr, 16) % 20;
  return bucket < 4   ? SplitPart::kTest
         : bucket < 8 ? SplitPart::kValidation
                      : SplitPart::kFit;
}

absl::StatusOr<PooledTask> PoolUnits(layers::GptImpl& base,
                                     const datasets::Tokenizer& tokenizer,
                                     const ProbedBlock& probed,
                                     absl::string_view jsonl,
                                     const UnitProbingOptions& options) {
  PooledTask task;
  std::vector<std::vector<int64_t>> texts;  // Each kept text's window of ids.
  std::vector<bool> at_last_token;
  for (absl::string_view line :
       absl::StrSplit(jsonl, '\n', absl::SkipEmpty())) {
    ASSIGN_OR_RETURN(const datasets::Document document,
                     datasets::ParseJsonDocument(line));
    std::vector<int> ids = tokenizer.Encode(document.text());
    if (ids.size() < 5) continue;  // As the paper's released probe script.
    const auto pool = document.metadata().find("pool");
    const bool last =
        pool != document.metadata().end() && pool->second == "last";
    task.token_level = task.token_level || last;
    const size_t keep = std::min<size_t>(
        ids.size(),
        std::min<int64_t>(options.max_tokens, base.options().context_length));
    // A token-level example is read at its last token: keep the text's end.
    if (last) {
      ids.erase(ids.begin(), ids.end() - keep);
    } else {
      ids.resize(keep);
    }
    const auto group = document.metadata().find("group");
    task.parts.push_back(SplitPartOf(
        options.seed,
        group != document.metadata().end() ? group->second : document.text()));
    task.labels.push_back(document.label());
    texts.emplace_back(ids.begin(), ids.end());
    at_last_token.push_back(last);
  }
  const int64_t n_texts = texts.size();
  std::vector<std::vector<torch::Tensor>> pooled(
      probed.methods.size(), std::vector<torch::Tensor>(n_texts));
  // Texts run through the base model in batches of similar length, padded on
  // the right: causal attention keeps a text's positions blind to its padding.
  std::vector<int64_t> order(n_texts);
  for (int64_t i = 0; i < n_texts; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return texts[a].size() < texts[b].size();
  });
  std::vector<torch::Tensor> xs, ys, hidden;
  const std::string prefix = absl::StrCat("blocks.", probed.block, ".ffn.");
  base.FindHook(prefix + "hook_in")->Add(layers::CaptureHook(&xs));
  base.FindHook(prefix + "hook_out")->Add(layers::CaptureHook(&ys));
  base.FindHook(prefix + "hook_hidden")->Add(layers::CaptureHook(&hidden));
  const absl::Cleanup clear_hooks = [&base] { base.ClearHooks(); };
  torch::NoGradGuard no_grad;
  for (int64_t begin = 0; begin < n_texts; begin += kPooledTextsPerBatch) {
    const int64_t end = std::min(n_texts, begin + kPooledTextsPerBatch);
    const int64_t batch = end - begin;
    const int64_t length = texts[order[end - 1]].size();
    std::vector<int64_t> padded(batch * length, 0);
    for (int64_t b = 0; b < batch; ++b) {
      const std::vector<int64_t>& ids = texts[order[begin + b]];
      std::copy(ids.begin(), ids.end(), padded.begin() + b * length);
    }
    xs.clear();
    ys.clear();
    hidden.clear();
    base.Hidden(torch::tensor(padded).view({batch, length}));
    // Each text's mean over its own tokens, or its last one (token level).
    const auto pool = [&](const torch::Tensor& values) {
      const torch::Tensor by_text = values.reshape({batch, length, -1});
      std::vector<torch::Tensor> rows;
      for (int64_t b = 0; b < batch; ++b) {
        const int64_t text = order[begin + b];
        const int64_t kept = texts[text].size();
        rows.push_back(at_last_token[text]
                           ? by_text[b][kept - 1]
                           : by_text[b].slice(0, 0, kept).mean(0));
      }
      return torch::stack(rows);
    };
    const torch::Tensor x = pool(xs.at(0)), y = pool(ys.at(0));
    for (size_t m = 0; m < probed.methods.size(); ++m) {
      const ProbeMethod& method = probed.methods[m];
      // Pre-codes and the random projection are affine in their input
      // (SparseReplacementImpl::PreCodes), so they encode the pooled rows;
      // the neurons follow a nonlinearity and are pooled themselves.
      const torch::Tensor units =
          method.layer ? method.layer->PreCodes(method.on_output ? y : x)
          : method.layer_kind == "mlp_neurons"
              ? pool(hidden.at(0))
              : x.matmul(probed.random_directions);
      for (int64_t b = 0; b < batch; ++b) {
        pooled[m][order[begin + b]] = units[b];
      }
    }
  }
  for (const std::vector<torch::Tensor>& rows : pooled) {
    task.features.push_back(rows.empty() ? torch::Tensor()
                                         : torch::stack(rows));
  }
  return task;
}

int AppendProbeRows(const std::string& task, const PooledTask& pooled,
                    const ProbedBlock& probed,
                    const UnitProbingOptions& options,
                    UnitProbingTables& tables) {
  const std::vector<std::string>& labels = pooled.labels;
  std::map<std::string, int> classes;
  for (const std::string& label : labels) classes[label];
  if (classes.size() < 2) return 0;
  const int64_t n = labels.size();
  std::vector<int64_t> fit_rows, validation_rows, train_rows, test_rows;
  for (int64_t i = 0; i < n; ++i) {
    const SplitPart part = pooled.parts[i];
    (part == SplitPart::kTest ? test_rows : train_rows).push_back(i);
    if (part == SplitPart::kFit) fit_rows.push_back(i);
    if (part == SplitPart::kValidation) validation_rows.push_back(i);
  }
  auto rows = [](const torch::Tensor& t, const std::vector<int64_t>& r) {
    return t.index_select(0, torch::tensor(r, torch::kLong));
  };
  torch::NoGradGuard no_grad;
  for (size_t m = 0; m < probed.methods.size(); ++m) {
    const ProbeMethod& method = probed.methods[m];
    // Each part's rows once per method, in the probes' float64.
    const torch::Tensor features = pooled.features[m].to(torch::kDouble);
    const torch::Tensor train_x = rows(features, train_rows);
    const torch::Tensor fit_x = rows(features, fit_rows);
    const torch::Tensor validation_x = rows(features, validation_rows);
    const torch::Tensor test_x = rows(features, test_rows);
    for (const auto& [label, unused] : classes) {
      std::vector<uint8_t> flags(n);
      for (int64_t i = 0; i < n; ++i) flags[i] = labels[i] == label;
      const torch::Tensor positive =
          torch::tensor(std::vector<int64_t>(flags.begin(), flags.end()))
              .to(torch::kBool);
      const torch::Tensor test_y = rows(positive, test_rows);
      // Paper variant: fit on the whole training split, best unit on test.
      const ProbeOutcome paper =
          ProbeOneClass(train_x, rows(positive, train_rows), test_x, test_y,
                        test_x, test_y, options.candidates);
      // Leakage-free: units fitted on fit rows, chosen on validation rows.
      const ProbeOutcome clean = ProbeOneClass(
          fit_x, rows(positive, fit_rows), validation_x,
          rows(positive, validation_rows), test_x, test_y, options.candidates);
      const std::string key =
          absl::StrCat(options.base_name, ",", task, ",",
                       pooled.token_level ? "token" : "document", ",", label,
                       ",", method.name, ",", method.layer_kind);
      absl::StrAppendFormat(
          &tables.probes, "%s,%d,%d,%d,%.6f,%.6f,%d,%.6f,%d,%d\n", key,
          features.size(1), test_y.sum().item<int64_t>(), test_y.size(0),
          paper.best_f1, paper.best_balanced_accuracy, paper.best_unit,
          clean.selected_f1, clean.selected_unit, options.seed);
      if (paper.best_unit < 0) continue;
      const ClassDensities densities = UnitClassDensities(
          test_x.select(1, paper.best_unit), test_y, kDensityBins);
      const int64_t positives = test_y.sum().item<int64_t>();
      for (int b = 0; b < kDensityBins; ++b) {
        for (const bool side : {true, false}) {
          // A sample without texts has no density: no rows, not zeros.
          if (side ? positives == 0 : positives == test_y.size(0)) continue;
          absl::StrAppendFormat(
              &tables.densities, "%s,%d,%d,%s,%.3f,%.6g,%.6f\n", key,
              paper.best_unit, options.seed, side ? "positive" : "negative",
              (b + 0.5) / kDensityBins, densities.centres[b],
              side ? densities.positive[b] : densities.negative[b]);
        }
      }
    }
  }
  return classes.size();
}

absl::StatusOr<UnitProbingTables> ProbeUnits(
    layers::GptImpl& base, const datasets::Tokenizer& tokenizer,
    const std::vector<ProbedFit>& fits, const UnitProbingOptions& options) {
  ASSIGN_OR_RETURN(const ProbedBlock probed,
                   ProbedBlockOf(base, fits, options));
  UnitProbingTables tables{kUnitProbingHeader, kUnitDensitiesHeader};
  for (const std::string& path : options.data) {
    const std::string task = std::filesystem::path(path).stem().string();
    ASSIGN_OR_RETURN(const std::string jsonl, ReadFileToString(path));
    ASSIGN_OR_RETURN(const PooledTask pooled,
                     PoolUnits(base, tokenizer, probed, jsonl, options));
    const int classes = AppendProbeRows(task, pooled, probed, options, tables);
    if (classes == 0) continue;
    std::fprintf(stderr, "sparse_probe: %s: %lld texts, %d classes\n",
                 task.c_str(), static_cast<long long>(pooled.labels.size()),
                 classes);
  }
  return tables;
}

}  // namespace sparse_layers::analysis
