#include "analysis/neuron_usage/neuron_usage.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <unordered_set>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/common/status_macros.h"
#include "datasets/text/held_out_windows.h"
#include "models/hook_lookup.h"
#include "ops/hooks/hook_point.h"

namespace sparse_layers::analysis {

double Gini(const std::vector<int64_t>& counts) {
  std::vector<int64_t> sorted = counts;
  std::sort(sorted.begin(), sorted.end());
  const double n = static_cast<double>(sorted.size());
  double total = 0, weighted = 0;
  for (size_t i = 0; i < sorted.size(); ++i) {
    total += static_cast<double>(sorted[i]);
    weighted += static_cast<double>(i + 1) * static_cast<double>(sorted[i]);
  }
  if (total == 0) return 0;
  // The sorted form of Sum_i Sum_j |x_i - x_j| / (2 n^2 mean).
  return 2 * weighted / (n * total) - (n + 1) / n;
}

absl::StatusOr<BlockUsage> UsageOfBlock(const torch::Tensor& indices,
                                        const torch::Tensor& tokens,
                                        int64_t n) {
  if (indices.dim() != 3 || tokens.dim() != 2 ||
      indices.size(0) != tokens.numel()) {
    return absl::InvalidArgumentError(
        absl::StrCat("routing of shape ", indices.dim(), "-d with ",
                     indices.dim() == 3 ? indices.size(0) : -1,
                     " rows does not match ", tokens.numel(), " tokens"));
  }
  const int64_t neurons = n * n, channels = indices.size(1),
                k = indices.size(2), sequences = tokens.size(0),
                length = tokens.size(1);
  const torch::Tensor index_data = indices.to(torch::kLong).contiguous();
  const torch::Tensor token_data = tokens.to(torch::kLong).contiguous();
  const int64_t* idx = index_data.data_ptr<int64_t>();
  const int64_t* tok = token_data.data_ptr<int64_t>();
  // Whether each (sequence, position) holds its sequence's first occurrence
  // of its token.
  std::vector<bool> first(tokens.numel());
  for (int64_t s = 0; s < sequences; ++s) {
    std::unordered_set<int64_t> seen;
    for (int64_t t = 0; t < length; ++t) {
      first[s * length + t] = seen.insert(tok[s * length + t]).second;
    }
  }
  BlockUsage usage;
  usage.neurons = neurons;
  for (int64_t c = 0; c < channels; ++c) {
    std::vector<int64_t> count(neurons), unique(neurons), same_first(neurons),
        same_second(neurons), other(neurons);
    for (int64_t row = 0; row < tokens.numel(); ++row) {
      const int64_t* chosen = idx + (row * channels + c) * k;
      for (int64_t a = 0; a < k; ++a) {
        const int64_t i = chosen[a];
        if (i < 0 || i >= neurons) {
          return absl::InvalidArgumentError(
              absl::StrCat("neuron index ", i, " outside [0, ", neurons, ")"));
        }
        ++count[i];
        if (first[row]) ++unique[i];
        for (int64_t b = 0; b < k; ++b) {
          const int64_t j = chosen[b];
          if (b == a || j == i) continue;
          if (j / n == i / n) {
            ++same_first[i];
          } else if (j % n == i % n) {
            ++same_second[i];
          } else {
            ++other[i];
          }
        }
      }
    }
    int64_t used = 0;
    double p_first = 0, p_second = 0, p_other = 0;
    for (int64_t i = 0; i < neurons; ++i) {
      if (count[i] == 0) continue;
      ++used;
      const double events = static_cast<double>(count[i]);
      // Mean P(j | i) over the n - 1 partners sharing a sub-key and the
      // (n - 1)^2 sharing none.
      p_first += same_first[i] / (events * (n - 1));
      p_second += same_second[i] / (events * (n - 1));
      p_other += other[i] / (events * (n - 1) * (n - 1));
    }
    usage.used_fraction += static_cast<double>(used) / neurons;
    usage.gini += Gini(count);
    usage.gini_unique_tokens += Gini(unique);
    if (used > 0) {
      usage.coactivation_same_first += p_first / used;
      usage.coactivation_same_second += p_second / used;
      usage.coactivation_other += p_other / used;
    }
  }
  for (double* mean :
       {&usage.used_fraction, &usage.gini, &usage.gini_unique_tokens,
        &usage.coactivation_same_first, &usage.coactivation_same_second,
        &usage.coactivation_other}) {
    *mean /= static_cast<double>(channels);
  }
  return usage;
}

torch::Tensor CoactivationMap(const torch::Tensor& indices, int64_t m) {
  const torch::Tensor channel0 =
      indices.select(1, 0).to(torch::kLong).contiguous();
  const int64_t rows = channel0.size(0), k = channel0.size(1);
  const int64_t* idx = channel0.data_ptr<int64_t>();
  std::vector<double> co(m * m), count(m);
  for (int64_t row = 0; row < rows; ++row) {
    for (int64_t a = 0; a < k; ++a) {
      const int64_t i = idx[row * k + a];
      if (i >= m) continue;
      ++count[i];
      for (int64_t b = 0; b < k; ++b) {
        const int64_t j = idx[row * k + b];
        if (b != a && j < m && j != i) co[i * m + j] += 1;
      }
    }
  }
  torch::Tensor map = torch::zeros({m, m}, torch::kDouble);
  auto cells = map.accessor<double, 2>();
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < m; ++j) {
      if (count[i] > 0) cells[i][j] = co[i * m + j] / count[i];
    }
  }
  return map;
}

NeuronUsageTables::NeuronUsageTables()
    : usage_(
          "seed,model,block,neurons,used_fraction,gini,gini_unique_tokens,"
          "coactivation_same_first,coactivation_same_second,"
          "coactivation_other,coactivation_excess_first,"
          "coactivation_excess_second\n"),
      coactivation_("seed,model,block,neuron,other_neuron,probability\n") {}

absl::Status NeuronUsageTables::AddModel(const std::string& name, int64_t seed,
                                         layers::GptImpl& model,
                                         const datasets::TokenShardSet& tokens,
                                         const NeuronUsageOptions& options) {
  const int blocks = static_cast<int>(model.blocks.size());
  const int64_t d_ffn = model.options().d_ffn;
  const int64_t n = std::llround(std::sqrt(static_cast<double>(d_ffn)));
  if (n * n != d_ffn || n < 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        name, ": d_ffn ", d_ffn, " is not n^2 neurons of a product-key FFN"));
  }
  const int length =
      std::min<int>(options.sequence_length, model.options().context_length);
  ASSIGN_OR_RETURN(
      const datasets::HeldOutWindows windows,
      datasets::ReadHeldOutWindows(tokens, options.sequences, length));
  const int sequences = windows.count;
  const torch::Tensor window_tokens =
      torch::tensor(windows.ids).view({sequences, length});

  std::vector<std::vector<torch::Tensor>> sinks(blocks);
  for (int b = 0; b < blocks; ++b) {
    absl::StatusOr<layers::HookPoint*> hook = layers::RequireHook(
        model, absl::StrCat("blocks.", b, ".ffn.hook_router_indices"));
    if (!hook.ok()) {
      model.ClearHooks();
      return absl::Status(hook.status().code(),
                          absl::StrCat(name, ": ", hook.status().message(),
                                       " (a product-key FFN is needed)"));
    }
    (*hook)->Add(layers::CaptureHook(&sinks[b]));
  }
  {
    torch::NoGradGuard no_grad;
    for (int64_t start = 0; start < sequences; start += 32) {
      model.forward(window_tokens.slice(0, start, start + 32));
    }
  }
  model.ClearHooks();
  const int map_block = std::max(0, blocks - 2);  // Fig. 8: the penultimate.
  for (int b = 0; b < blocks; ++b) {
    const torch::Tensor indices = torch::cat(sinks[b]);
    ASSIGN_OR_RETURN(const BlockUsage usage,
                     UsageOfBlock(indices, window_tokens, n));
    absl::StrAppendFormat(
        &usage_, "%d,%s,%d,%d,%.6f,%.6f,%.6f,%.6g,%.6g,%.6g,%.6g,%.6g\n", seed,
        name, b, usage.neurons, usage.used_fraction, usage.gini,
        usage.gini_unique_tokens, usage.coactivation_same_first,
        usage.coactivation_same_second, usage.coactivation_other,
        usage.coactivation_same_first - usage.coactivation_other,
        usage.coactivation_same_second - usage.coactivation_other);
    if (b != map_block) continue;
    const int64_t m = std::min<int64_t>(options.map_neurons, n * n);
    const torch::Tensor map = CoactivationMap(indices, m);
    auto cells = map.accessor<double, 2>();
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < m; ++j) {
        absl::StrAppendFormat(&coactivation_, "%d,%s,%d,%d,%d,%.6g\n", seed,
                              name, b, i, j, cells[i][j]);
      }
    }
  }
  std::fprintf(stderr, "neuron_usage: %s: %d sequences of %d tokens\n",
               name.c_str(), sequences, length);
  return absl::OkStatus();
}

}  // namespace sparse_layers::analysis
