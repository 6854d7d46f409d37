#include "analysis/routing/router_domains.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/common/status_macros.h"
#include "layers/mohd/mohd.h"
#include "models/hook_lookup.h"
#include "ops/hooks/hook_point.h"

namespace sparse_layers::analysis {
namespace {

constexpr char kDomainsHeader[] =
    "seed,model,router,block,module,domain,sub_dim,probability,"
    "selected_share,tokens\n";
constexpr char kSpecialisationHeader[] =
    "seed,model,router,block,module,domains,tokens,js_between,js_within,"
    "js_excess,min_share,max_share\n";

// One MoHD router of a block: its gate and the hook holding its input.
struct Router {
  std::string name, module, hook;
  int block;
  layers::MohdGate gate;
};

std::vector<Router> RoutersOf(layers::GptImpl& model) {
  std::vector<Router> routers;
  for (size_t b = 0; b < model.blocks.size(); ++b) {
    const int block = static_cast<int>(b);
    if (auto attention = std::dynamic_pointer_cast<layers::MohdAttentionImpl>(
            model.blocks[b]->attention)) {
      routers.push_back({absl::StrCat("b", block, "_attention"), "attention",
                         absl::StrCat("blocks.", block, ".attn.hook_in"), block,
                         attention->gate});
    }
    if (auto ffn = std::dynamic_pointer_cast<layers::MohdFfnImpl>(
            model.blocks[b]->ffn)) {
      routers.push_back({absl::StrCat("b", block, "_ffn"), "ffn",
                         absl::StrCat("blocks.", block, ".ffn.hook_in"), block,
                         ffn->gate});
    }
  }
  return routers;
}

// Per router, the (tokens, D) inputs of `ids` run as windows of `length`,
// position 0 of each window left out.
absl::StatusOr<std::vector<torch::Tensor>> RouterInputs(
    layers::GptImpl& model, const std::vector<Router>& routers,
    const std::vector<int>& ids, int64_t length) {
  std::vector<std::vector<torch::Tensor>> sinks(routers.size());
  const absl::Cleanup clear_hooks = [&model] { model.ClearHooks(); };
  for (size_t r = 0; r < routers.size(); ++r) {
    ASSIGN_OR_RETURN(layers::HookPoint * hook,
                     layers::RequireHook(model, routers[r].hook));
    hook->Add(layers::CaptureHook(&sinks[r]));
  }
  const int64_t windows = static_cast<int64_t>(ids.size()) / length;
  const torch::Tensor all =
      torch::tensor(
          std::vector<int64_t>(ids.begin(), ids.begin() + windows * length),
          torch::kLong)
          .view({windows, length});
  constexpr int64_t kWindowsPerBatch = 16;
  for (int64_t w = 0; w < windows; w += kWindowsPerBatch) {
    model.forward(all.slice(0, w, std::min(windows, w + kWindowsPerBatch)));
  }
  std::vector<torch::Tensor> inputs;
  for (size_t r = 0; r < routers.size(); ++r) {
    const int64_t width = routers[r].gate->options().d_model;
    std::vector<torch::Tensor> rows;
    for (const torch::Tensor& captured : sinks[r]) {
      rows.push_back(captured.reshape({-1, length, width})
                         .slice(1, 1)
                         .reshape({-1, width}));
    }
    inputs.push_back(torch::cat(rows).to(torch::kFloat));
  }
  return inputs;
}

// Mean router probability over the specialised sub-dims and mean share of
// the routed slots, each (N - S,), of router inputs x (tokens, D).
std::pair<torch::Tensor, torch::Tensor> ProbabilityAndShare(
    Router& router, const torch::Tensor& x) {
  const layers::MohdOptions& o = router.gate->options();
  const torch::Tensor logits = torch::matmul(x, router.gate->router);
  const torch::Tensor probability =
      torch::softmax(logits.slice(1, o.shared), -1).mean(0);
  const torch::Tensor mask = router.gate->Route(x).mask.slice(1, o.shared);
  return {probability.to(torch::kDouble),
          (mask.sum(0) / mask.sum()).to(torch::kDouble)};
}

}  // namespace

double JensenShannonBits(const torch::Tensor& p, const torch::Tensor& q) {
  const torch::Tensor a = p.to(torch::kDouble), b = q.to(torch::kDouble);
  const torch::Tensor m = 0.5 * (a + b);
  // x log2(x / m), 0 where x = 0 (its limit).
  const auto kl = [&m](const torch::Tensor& x) {
    return torch::where(x > 0, x * torch::log2(x / m), torch::zeros_like(x))
        .sum()
        .item<double>();
  };
  return 0.5 * kl(a) + 0.5 * kl(b);
}

Specialisation DomainSpecialisation(
    const std::vector<std::array<torch::Tensor, 2>>& shares) {
  Specialisation out;
  int pairs = 0;
  for (size_t d = 0; d < shares.size(); ++d) {
    out.within += JensenShannonBits(shares[d][0], shares[d][1]);
    for (size_t e = d + 1; e < shares.size(); ++e) {
      for (int h = 0; h < 2; ++h) {
        for (int g = 0; g < 2; ++g) {
          out.between += JensenShannonBits(shares[d][h], shares[e][g]);
          ++pairs;
        }
      }
    }
  }
  out.within /= static_cast<double>(shares.size());
  out.between /= std::max(pairs, 1);
  return out;
}

RouterDomainTables::RouterDomainTables()
    : domains_(kDomainsHeader), specialisation_(kSpecialisationHeader) {}

absl::Status RouterDomainTables::AddModel(
    const std::string& name, int64_t seed, layers::GptImpl& model,
    const std::vector<datasets::DomainTokens>& domains,
    const RouterDomainOptions& options) {
  if (domains.size() < 2) return absl::OkStatus();  // Nothing to compare.
  std::vector<Router> routers = RoutersOf(model);
  // A static MoHD (every active sub-dim shared) routes nothing.
  routers.erase(std::remove_if(routers.begin(), routers.end(),
                               [](const Router& r) {
                                 const auto& o = r.gate->options();
                                 return o.top_k == o.shared;
                               }),
                routers.end());
  if (routers.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, " has no routed MoHD attention or FFN"));
  }
  torch::NoGradGuard no_grad;
  model.eval();
  torch::manual_seed(options.seed);  // A random-routing model's draws.
  const int64_t length = std::min<int64_t>(options.sequence_length,
                                           model.options().context_length);
  // inputs[d][h][r]: router r's inputs on domain d's half h.
  std::vector<std::array<std::vector<torch::Tensor>, 2>> inputs(domains.size());
  for (size_t d = 0; d < domains.size(); ++d) {
    for (int h = 0; h < 2; ++h) {
      if (static_cast<int64_t>(domains[d].halves[h].size()) < length) {
        return absl::InvalidArgumentError(absl::StrCat(
            "domain ", domains[d].domain, " has ", domains[d].halves[h].size(),
            " tokens in a half, under one window of ", length));
      }
      ASSIGN_OR_RETURN(
          inputs[d][h],
          RouterInputs(model, routers, domains[d].halves[h], length));
    }
  }
  for (size_t r = 0; r < routers.size(); ++r) {
    Router& router = routers[r];
    const int64_t shared = router.gate->options().shared;
    std::vector<std::array<torch::Tensor, 2>> shares(domains.size());
    std::vector<torch::Tensor> everything;
    int64_t tokens = 0;
    for (size_t d = 0; d < domains.size(); ++d) {
      const torch::Tensor x = torch::cat({inputs[d][0][r], inputs[d][1][r]});
      for (int h = 0; h < 2; ++h) {
        shares[d][h] = ProbabilityAndShare(router, inputs[d][h][r]).second;
      }
      const auto [probability, share] = ProbabilityAndShare(router, x);
      for (int64_t i = 0; i < share.size(0); ++i) {
        absl::StrAppendFormat(&domains_, "%d,%s,%s,%d,%s,%s,%d,%.6f,%.6f,%d\n",
                              seed, name, router.name, router.block,
                              router.module, domains[d].domain, shared + i,
                              probability[i].item<double>(),
                              share[i].item<double>(), x.size(0));
      }
      everything.push_back(x);
      tokens += x.size(0);
    }
    const torch::Tensor overall =
        ProbabilityAndShare(router, torch::cat(everything)).second;
    const Specialisation js = DomainSpecialisation(shares);
    absl::StrAppendFormat(
        &specialisation_, "%d,%s,%s,%d,%s,%d,%d,%.6f,%.6f,%.6f,%.6f,%.6f\n",
        seed, name, router.name, router.block, router.module, domains.size(),
        tokens, js.between, js.within, js.between - js.within,
        overall.min().item<double>(), overall.max().item<double>());
  }
  return absl::OkStatus();
}

}  // namespace sparse_layers::analysis
