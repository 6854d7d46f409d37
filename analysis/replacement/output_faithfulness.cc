#include "analysis/replacement/output_faithfulness.h"

#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <numeric>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/common/status_macros.h"
#include "config/config_loader.h"
#include "datasets/text/held_out_windows.h"
#include "models/hook_lookup.h"
#include "ops/hooks/hook_point.h"

namespace sparse_layers::analysis {
namespace {

// The split's held-out windows as (count, length) ids.
absl::StatusOr<torch::Tensor> WindowTensor(
    const datasets::TokenShardSet& tokens, int count, int length) {
  ASSIGN_OR_RETURN(const datasets::HeldOutWindows windows,
                   datasets::ReadHeldOutWindows(tokens, count, length));
  return torch::tensor(windows.ids, torch::kLong)
      .view({windows.count, windows.length});
}

// One model's view of the prompts and windows.
struct Faithfulness {
  NextTokenAgreement agreement;
  std::vector<double> curve;
  torch::Tensor continuations;  // (B, T).
};

Faithfulness Measure(layers::GptImpl& model, const torch::Tensor& prompts,
                     const torch::Tensor& base_continuations,
                     const std::vector<torch::Tensor>& base_log_probs,
                     const std::vector<torch::Tensor>& windows,
                     int new_tokens) {
  const torch::Tensor continuations =
      GreedyContinuations(model, prompts, new_tokens);
  return Faithfulness{CompareNextTokens(base_log_probs, model, windows),
                      PrefixMatchCurve(base_continuations, continuations),
                      continuations};
}

// Generated text on one line of a listing.
std::string OneLine(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text;
}

std::vector<int> Ids(const torch::Tensor& tokens) {
  const torch::Tensor ids = tokens.to(torch::kInt).contiguous();
  return std::vector<int>(ids.data_ptr<int>(),
                          ids.data_ptr<int>() + ids.numel());
}

double Mean(const std::vector<double>& values) {
  return std::accumulate(values.begin(), values.end(), 0.0) / values.size();
}

}  // namespace

torch::Tensor GreedyContinuations(layers::GptImpl& model,
                                  const torch::Tensor& prompts,
                                  int new_tokens) {
  torch::NoGradGuard no_grad;
  const bool was_training = model.is_training();
  model.eval();
  const int64_t context = model.options().context_length;
  torch::Tensor sequence = prompts;
  const torch::Tensor unembedding = model.UnembeddingWeight();
  for (int step = 0; step < new_tokens; ++step) {
    const int64_t length = sequence.size(1);
    const torch::Tensor input =
        length > context ? sequence.slice(1, length - context) : sequence;
    // Only the last position's logits: (B, vocab), never (B, T, vocab).
    const torch::Tensor last = model.Hidden(input).select(1, -1);
    const torch::Tensor next =
        torch::nn::functional::linear(last, unembedding).argmax(-1);
    sequence = torch::cat({sequence, next.unsqueeze(1)}, 1);
  }
  model.train(was_training);
  return sequence.slice(1, prompts.size(1));
}

std::string ExampleLine(const std::string& label,
                        const torch::Tensor& continuation,
                        const torch::Tensor& reference,
                        const datasets::Tokenizer& tokenizer) {
  const std::vector<int> ids = Ids(continuation);
  const std::vector<int> base = Ids(reference);
  size_t same = 0;
  while (same < ids.size() && same < base.size() && ids[same] == base[same]) {
    ++same;
  }
  const std::vector<int> prefix(ids.begin(), ids.begin() + same);
  const std::vector<int> rest(ids.begin() + same, ids.end());
  std::string line = absl::StrFormat("  %s (%d identical): %s", label, same,
                                     tokenizer.Decode(prefix));
  if (!rest.empty()) absl::StrAppend(&line, " || ", tokenizer.Decode(rest));
  return OneLine(line) + "\n";
}

std::vector<double> PrefixMatchCurve(const torch::Tensor& a,
                                     const torch::Tensor& b) {
  TORCH_CHECK(a.sizes() == b.sizes() && a.dim() == 2,
              "continuations must be two (B, T) tensors");
  // A row still matches at t when its first t tokens all agree.
  const torch::Tensor matched =
      a.eq(b).to(torch::kLong).cumprod(1).to(torch::kDouble).mean(0);
  return std::vector<double>(matched.data_ptr<double>(),
                             matched.data_ptr<double>() + matched.numel());
}

std::vector<torch::Tensor> NextTokenLogProbs(
    layers::GptImpl& model, const std::vector<torch::Tensor>& windows) {
  torch::NoGradGuard no_grad;
  const bool was_training = model.is_training();
  model.eval();
  std::vector<torch::Tensor> log_probs;
  for (const torch::Tensor& window : windows) {
    log_probs.push_back(torch::log_softmax(model.forward(window), -1));
  }
  model.train(was_training);
  return log_probs;
}

NextTokenAgreement CompareNextTokens(
    const std::vector<torch::Tensor>& reference_log_probs,
    layers::GptImpl& other, const std::vector<torch::Tensor>& windows) {
  TORCH_CHECK(reference_log_probs.size() == windows.size(),
              "one reference per window batch");
  double kl = 0, agree = 0;
  int64_t positions = 0;
  for (size_t i = 0; i < windows.size(); ++i) {
    const torch::Tensor p = reference_log_probs[i];
    const torch::Tensor q = NextTokenLogProbs(other, {windows[i]})[0];
    // KL(p || q) = sum_v p_v (log p_v - log q_v), per position.
    kl += (p.exp() * (p - q)).sum(-1).sum().item<double>();
    agree += p.argmax(-1).eq(q.argmax(-1)).sum().item<double>();
    positions += p.size(0) * p.size(1);
  }
  return NextTokenAgreement{kl / positions, agree / positions};
}

absl::StatusOr<OutputFaithfulnessTables> EvaluateOutputFaithfulness(
    layers::LoadedModel& base, const std::string& base_path,
    const datasets::TokenShardSet& tokens,
    const std::vector<std::string>& replacement_paths,
    const OutputFaithfulnessOptions& options,
    const datasets::Tokenizer* tokenizer) {
  if (replacement_paths.empty()) {
    return absl::InvalidArgumentError("no fits given");
  }
  layers::GptImpl& model = *base.model;
  if (options.prompt_tokens + options.new_tokens >
      model.options().context_length) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%d prompt + %d new tokens exceed the context length %d",
        options.prompt_tokens, options.new_tokens,
        model.options().context_length));
  }
  const int length = config::TrainingWindowLength(base.config);
  ASSIGN_OR_RETURN(
      const torch::Tensor prompt_windows,
      WindowTensor(tokens, options.prompt_batches * options.batch_size,
                   length));
  const torch::Tensor prompts =
      prompt_windows.slice(1, 0, options.prompt_tokens);
  ASSIGN_OR_RETURN(
      const torch::Tensor kl_windows,
      WindowTensor(tokens, options.kl_batches * options.kl_batch_size, length));
  const std::vector<torch::Tensor> windows =
      kl_windows.split(options.kl_batch_size, 0);

  const torch::Tensor base_continuations =
      GreedyContinuations(model, prompts, options.new_tokens);
  const std::vector<torch::Tensor> base_log_probs =
      NextTokenLogProbs(model, windows);

  ASSIGN_OR_RETURN(const std::vector<layers::LoadedReplacement> fits,
                   layers::LoadReplacements(replacement_paths));
  const int layer = fits.front().spec.layer();
  const uint64_t seed = fits.front().loaded.config.runtime().seed();
  for (const layers::LoadedReplacement& fit : fits) {
    RETURN_IF_ERROR(layers::CheckFittedOn(fit, base, base_path));
    if (fit.spec.layer() != layer || fit.spec.on_output()) {
      return absl::InvalidArgumentError(absl::StrCat(
          fit.path, ": every fit must replace the FFN of block ", layer));
    }
    if (fit.loaded.config.runtime().seed() != seed) {
      return absl::InvalidArgumentError(absl::StrCat(
          fit.path, " has seed ", fit.loaded.config.runtime().seed(),
          ", the first fit ", seed, ": one seed per table"));
    }
  }

  // The floor: the base model with the replaced block's FFN output zeroed.
  ASSIGN_OR_RETURN(layers::HookPoint* const ffn_out,
                   layers::RequireHook(
                       model, absl::StrCat("blocks.", layer, ".ffn.hook_out")));
  ffn_out->Add(layers::ZeroAblationHook());
  const Faithfulness ablated =
      Measure(model, prompts, base_continuations, base_log_probs, windows,
              options.new_tokens);
  ffn_out->Clear();

  OutputFaithfulnessTables tables;
  tables.faithfulness =
      "base,name,method,k,seed,training,kl,top1_agreement,mean_prefix_match,"
      "final_prefix_match,zero_ablated_kl,zero_ablated_top1_agreement,"
      "zero_ablated_mean_prefix_match,zero_ablated_final_prefix_match\n";
  tables.prefix_match = "base,name,method,k,seed,t,share_identical\n";
  const auto append_curve = [&](const std::string& name,
                                const std::string& method, int k,
                                const std::vector<double>& curve) {
    for (size_t t = 0; t < curve.size(); ++t) {
      absl::StrAppendFormat(&tables.prefix_match, "%s,%s,%s,%d,%d,%d,%.6f\n",
                            options.base_name, name, method, k, seed, t + 1,
                            curve[t]);
    }
  };
  append_curve(options.base_name + "_zero_ablated", "zero_ablation", 0,
               ablated.curve);
  const int64_t examples =
      std::min<int64_t>(options.examples, base_continuations.size(0));
  // Per example, its lines after the prompt and the base model's.
  std::vector<std::string> example_lines(examples);
  const auto add_examples = [&](const std::string& label,
                                const torch::Tensor& continuations) {
    if (tokenizer == nullptr) return;
    for (int64_t i = 0; i < examples; ++i) {
      example_lines[i] += ExampleLine(label, continuations[i],
                                      base_continuations[i], *tokenizer);
    }
  };
  add_examples("zero_ablation", ablated.continuations);
  for (const layers::LoadedReplacement& fit : fits) {
    const Faithfulness measured =
        Measure(*fit.loaded.model, prompts, base_continuations, base_log_probs,
                windows, options.new_tokens);
    const std::string& name = fit.loaded.config.name();
    const int k = fit.layer->options().top_k;
    if (k == options.examples_k) add_examples(name, measured.continuations);
    absl::StrAppendFormat(
        &tables.faithfulness,
        "%s,%s,%s,%d,%d,%s,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f\n",
        options.base_name, name, fit.spec.ffn(), k, seed,
        fit.loaded.config.model().layer_options().random_k() ? "random_k"
                                                             : "default",
        measured.agreement.kl, measured.agreement.top1_agreement,
        Mean(measured.curve), measured.curve.back(), ablated.agreement.kl,
        ablated.agreement.top1_agreement, Mean(ablated.curve),
        ablated.curve.back());
    append_curve(name, fit.spec.ffn(), k, measured.curve);
    std::fprintf(stderr,
                 "output_faithfulness: %s: KL %.4f, top-1 %.3f, prefix match "
                 "at T %.3f\n",
                 name.c_str(), measured.agreement.kl,
                 measured.agreement.top1_agreement, measured.curve.back());
  }
  if (tokenizer != nullptr) {
    for (int64_t i = 0; i < examples; ++i) {
      absl::StrAppendFormat(
          &tables.examples, "Prompt %d: %s\n  base model: %s\n%s\n", i + 1,
          OneLine(tokenizer->Decode(Ids(prompts[i]))),
          OneLine(tokenizer->Decode(Ids(base_continuations[i]))),
          example_lines[i]);
    }
  }
  return tables;
}

}  // namespace sparse_layers::analysis
