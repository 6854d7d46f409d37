// sparse_probe: sparse probing of a base model's FFN units and of replacement
// layers fitted to it (MxD arXiv:2505.21364 Sec. 3.2.1, Fig. 4, Sec. B.5) on
// any labelled JSONL ({"text": ..., "label": ...}, optional metadata "group",
// and "pool": "last" for token-level examples).
//
// Each text is cut to its first --max_tokens tokens (its last ones for
// token-level examples) and run through the base model once; the replaced
// block's FFN input x and output y are captured, and every method's unit
// activations are mean-pooled over the text's tokens (document-level tasks,
// the paper's) or read at the last token (token-level tasks, the CSV's
// granularity):
//   mlp_neurons  the base FFN's hidden units;
//   <fit name>   a replacement layer's pre-activations (TC/STC encoder, MxD
//                gate logits, SAE encoder on y) read from its checkpoint;
//   random       a random projection of x drawn from --seed, with as many
//                units as the widest layer (control).
// Texts are split 80/20 by a hash of (--seed, group) (train/test); for every
// class (one vs all) the paper's variant (units chosen and best taken on
// test) and the leakage-free variant (train split 75/25 into fit and
// validation, the unit chosen on validation) are reported, one CSV row per
// (task, class, method), each with --seed in a `seed` column: one seed's
// probes run on that seed's fits, so the claims engine pairs them.
//
//   sparse_probe --base=lm.pt --tokenizer=bpe.model --out=probe.csv --seed=1
//       --data=brown_genre.jsonl,spam_ham.jsonl tc_k16_s1.pt mxd_k16_s1.pt ...
#include <torch/torch.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "analysis/probing/sparse_probing.h"
#include "datasets/text/corpus_readers.h"
#include "datasets/text/tokenizer.h"
#include "layers/backend/torch_init.h"
#include "layers/models/model_loader.h"
#include "layers/replacement/sparse_replacement.h"
#include "tools/common/cpu_slots.h"
#include "tools/common/digest.h"
#include "tools/common/file_io.h"

ABSL_FLAG(std::string, base, "", "The base model (.pt)");
ABSL_FLAG(std::string, base_name, "base", "The base model's name in the CSV");
ABSL_FLAG(std::string, tokenizer, "", "The base model's tokenizer");
ABSL_FLAG(std::vector<std::string>, data, {}, "Labelled JSONL files");
ABSL_FLAG(int, layer, -1, "Block to probe (-1: the fits' block)");
ABSL_FLAG(int, max_tokens, 127, "Tokens per text (MxD Sec. B.5)");
ABSL_FLAG(int, candidates, 100, "Units fitted per class (top mean difference)");
ABSL_FLAG(uint64_t, seed, 42,
          "Seed of the random control and the splits (the CSV's seed)");
ABSL_FLAG(std::string, out, "", "CSV path");

namespace sparse_layers::analysis {
namespace {

struct Method {
  std::string name;
  std::string layer_kind;  // Registry name, "mlp_neurons" or "random".
  std::shared_ptr<layers::SparseReplacementImpl> layer;
  bool on_output = false;
};

// The first 20% of groups by hash are test; of the rest, a quarter is the
// leakage-free variant's validation part. The seed is hashed in so that seeds
// resample the split (the paper's 80/20 shuffle, MxD Sec. B.5) as well.
enum class Part { kFit, kValidation, kTest };
Part PartOf(uint64_t seed, const std::string& group) {
  const std::string digest = Sha256Hex(absl::StrCat(seed, ":", group));
  const int bucket = std::stoi(digest.substr(0, 6), nullptr, 16) % 20;
  return bucket < 4 ? Part::kTest : bucket < 8 ? Part::kValidation : Part::kFit;
}

absl::Status Run(const std::vector<std::string>& fits) {
  if (absl::Status s = FirstError(
          {RequiredFile(FLAGS_base), RequiredFile(FLAGS_tokenizer),
           RequiredFile(FLAGS_data), RequiredFlag(FLAGS_out),
           FlagAtLeast(FLAGS_layer, -1), FlagAtLeast(FLAGS_max_tokens, 1),
           FlagAtLeast(FLAGS_candidates, 1), FilesExist("fit", fits)});
      !s.ok()) {
    return s;
  }
  if (absl::Status s = AcquireCpuSlotIfRequested(absl::GetFlag(FLAGS_threads));
      !s.ok()) {
    return s;
  }
  auto base = layers::LoadModel(absl::GetFlag(FLAGS_base));
  if (!base.ok()) return base.status();
  std::string error;
  auto tokenizer =
      datasets::Tokenizer::Load(absl::GetFlag(FLAGS_tokenizer), &error);
  if (!tokenizer) return absl::InvalidArgumentError(error);

  std::vector<Method> methods = {{"mlp_neurons", "mlp_neurons", nullptr}};
  int layer = absl::GetFlag(FLAGS_layer);
  int64_t widest = 0;
  for (const std::string& path : fits) {
    auto fitted = layers::LoadReplacement(path);
    if (!fitted.ok()) return fitted.status();
    const config::FfnReplacement& spec = fitted->spec;
    if (layer < 0) layer = spec.layer();
    if (spec.layer() != layer) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, " replaces block ", spec.layer(), ", not ", layer));
    }
    methods.push_back({fitted->loaded.config.name(), spec.ffn(), fitted->layer,
                       spec.on_output()});
    widest = std::max(widest, fitted->layer->units());
  }
  if (layer < 0) layer = base->model->options().n_layers * 2 / 3;
  if (layer >= base->model->options().n_layers) {
    return absl::InvalidArgumentError(
        absl::StrCat("--layer ", layer, ": the base model has ",
                     base->model->options().n_layers, " blocks"));
  }
  const int64_t d = base->model->options().d_model;
  torch::manual_seed(absl::GetFlag(FLAGS_seed));
  const torch::Tensor random_directions =
      torch::randn({d, std::max<int64_t>(widest, 4 * d)});
  methods.push_back({"random", "random", nullptr});

  layers::GptImpl& model = *base->model;
  std::vector<torch::Tensor> xs, ys, hidden;
  const std::string prefix = absl::StrCat("blocks.", layer, ".ffn.");
  for (const char* hook : {"hook_in", "hook_out", "hook_hidden"}) {
    if (model.FindHook(prefix + hook) == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("the base model has no hook ", prefix, hook));
    }
  }
  model.FindHook(prefix + "hook_in")->Add(layers::CaptureHook(&xs));
  model.FindHook(prefix + "hook_out")->Add(layers::CaptureHook(&ys));
  model.FindHook(prefix + "hook_hidden")->Add(layers::CaptureHook(&hidden));

  std::string csv =
      "base,task,granularity,class,method,layer_kind,units,test_positives,"
      "test_texts,"
      "best_f1,best_balanced_accuracy,best_unit,selected_f1,selected_unit,"
      "seed\n";
  torch::NoGradGuard no_grad;
  for (const std::string& path : absl::GetFlag(FLAGS_data)) {
    const std::string task = std::filesystem::path(path).stem().string();
    auto jsonl = ReadFileToString(path);
    if (!jsonl.ok()) return jsonl.status();
    std::vector<std::string> labels;
    std::vector<Part> parts;
    std::vector<std::vector<torch::Tensor>> pooled(methods.size());
    bool token_level = false;
    for (absl::string_view line :
         absl::StrSplit(*jsonl, '\n', absl::SkipEmpty())) {
      auto document = datasets::ParseJsonDocument(line);
      if (!document.ok()) return document.status();
      std::vector<int> ids = tokenizer->Encode(document->text());
      if (ids.size() < 5) continue;  // As the paper's released probe script.
      const auto pool = document->metadata().find("pool");
      const bool at_last_token =
          pool != document->metadata().end() && pool->second == "last";
      token_level = token_level || at_last_token;
      const size_t keep = std::min<size_t>(
          ids.size(), std::min<int64_t>(absl::GetFlag(FLAGS_max_tokens),
                                        model.options().context_length));
      // A token-level example is read at its last token: keep the text's end.
      if (at_last_token) {
        ids.erase(ids.begin(), ids.end() - keep);
      } else {
        ids.resize(keep);
      }
      const auto group = document->metadata().find("group");
      parts.push_back(
          PartOf(absl::GetFlag(FLAGS_seed), group != document->metadata().end()
                                                ? group->second
                                                : document->text()));
      labels.push_back(document->label());
      xs.clear();
      ys.clear();
      hidden.clear();
      model.Hidden(torch::tensor(std::vector<int64_t>(ids.begin(), ids.end()))
                       .unsqueeze(0));
      const torch::Tensor x = xs.at(0).reshape({-1, d});
      const torch::Tensor y = ys.at(0).reshape({-1, d});
      for (size_t m = 0; m < methods.size(); ++m) {
        const Method& method = methods[m];
        torch::Tensor units;
        if (method.layer) {
          units = method.layer->PreCodes(method.on_output ? y : x);
        } else if (method.layer_kind == "mlp_neurons") {
          units = hidden.at(0).reshape({x.size(0), -1});
        } else {
          units = x.matmul(random_directions);
        }
        // Mean over the text's tokens, or its last token (token-level tasks).
        pooled[m].push_back(at_last_token ? units[units.size(0) - 1]
                                          : units.mean(0));
      }
    }
    std::map<std::string, int> classes;
    for (const std::string& label : labels) classes[label];
    if (classes.size() < 2) continue;
    const int64_t n = labels.size();
    std::vector<int64_t> fit_rows, validation_rows, train_rows, test_rows;
    for (int64_t i = 0; i < n; ++i) {
      (parts[i] == Part::kTest ? test_rows : train_rows).push_back(i);
      if (parts[i] == Part::kFit) fit_rows.push_back(i);
      if (parts[i] == Part::kValidation) validation_rows.push_back(i);
    }
    auto rows = [](const torch::Tensor& t, const std::vector<int64_t>& r) {
      return t.index_select(0, torch::tensor(r, torch::kLong));
    };
    for (size_t m = 0; m < methods.size(); ++m) {
      const torch::Tensor features = torch::stack(pooled[m]);
      for (const auto& [label, unused] : classes) {
        std::vector<uint8_t> flags(n);
        for (int64_t i = 0; i < n; ++i) flags[i] = labels[i] == label;
        const torch::Tensor positive =
            torch::tensor(std::vector<int64_t>(flags.begin(), flags.end()))
                .to(torch::kBool);
        const torch::Tensor test_x = rows(features, test_rows);
        const torch::Tensor test_y = rows(positive, test_rows);
        // Paper variant: fit on the whole training split, best unit on test.
        const ProbeOutcome paper = ProbeOneClass(
            rows(features, train_rows), rows(positive, train_rows), test_x,
            test_y, test_x, test_y, absl::GetFlag(FLAGS_candidates));
        // Leakage-free: units fitted on fit rows, chosen on validation rows.
        const ProbeOutcome clean = ProbeOneClass(
            rows(features, fit_rows), rows(positive, fit_rows),
            rows(features, validation_rows), rows(positive, validation_rows),
            test_x, test_y, absl::GetFlag(FLAGS_candidates));
        absl::StrAppendFormat(
            &csv, "%s,%s,%s,%s,%s,%s,%d,%d,%d,%.6f,%.6f,%d,%.6f,%d,%d\n",
            absl::GetFlag(FLAGS_base_name), task,
            token_level ? "token" : "document", label, methods[m].name,
            methods[m].layer_kind, features.size(1),
            test_y.sum().item<int64_t>(), test_y.size(0), paper.best_f1,
            paper.best_balanced_accuracy, paper.best_unit, clean.selected_f1,
            clean.selected_unit, absl::GetFlag(FLAGS_seed));
      }
    }
    std::fprintf(stderr, "sparse_probe: %s: %lld texts, %zu classes\n",
                 task.c_str(), static_cast<long long>(n), classes.size());
  }
  return WriteFileAtomically(absl::GetFlag(FLAGS_out), csv);
}

}  // namespace
}  // namespace sparse_layers::analysis

int main(int argc, char** argv) {
  const std::vector<std::string> fits = sparse_layers::InitMain(
      argc, argv, "Sparse probing of FFN units and replacement layers.");
  return sparse_layers::RunMain(
      [&] { return sparse_layers::analysis::Run(fits); });
}
