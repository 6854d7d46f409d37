// sae_reference_fixture --out=FILE: one training step's numbers of each SAE
// sparsity rule other than TopK (ReLU + L1, JumpReLU, BatchTopK in training
// and in evaluation), for sae_reference_test.py to recompute from the papers:
// for rule R, "R.x", every parameter "R.<name>" and buffer, the output
// "R.out", the loss "R.loss" (normalised MSE against x plus the rule's
// penalty), every gradient "R.grad.<name>" and, for BatchTopK in training, the
// updated threshold buffers. A torch pickle (torch.load reads it).
#include <torch/torch.h>

#include <cmath>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/common/file_io.h"
#include "base/common/main.h"
#include "layers/replacement/nmse.h"
#include "layers/replacement/sparse_replacement.h"
#include "ops/backend/torch_init.h"

ABSL_FLAG(std::string, out, "", "Output file (torch pickle)");

namespace sparse_layers::layers {
namespace {

using Sparsity = config::FfnReplacement::Sparsity;

struct Case {
  std::string name;
  Sparsity sparsity;
  double penalty;
  bool training;
  // 640 units with sparse pre-codes, so that the layer lists its codes
  // (SparseDot and SparseDecode) instead of decoding them densely.
  bool wide = false;
};

void AddCase(const Case& c, c10::Dict<std::string, torch::Tensor>& out) {
  ReplacementOptions options;
  options.d_in = options.d_out = 12;
  const int64_t units = c.wide ? 640 : 40;
  options.d_ffn = units;
  options.top_k = c.sparsity == config::FfnReplacement::BATCH_TOPK ? 4 : 0;
  options.sparsity = c.sparsity;
  options.sparsity_penalty = c.penalty;
  // Wide enough that some pre-codes fall in the kernel (Eqs. 11-12 fire).
  options.jump_relu_bandwidth = 0.2;
  SaeImpl sae(options);
  {
    torch::NoGradGuard no_grad;
    sae.encoder.normal_(0, 0.5);
    sae.encoder_bias.normal_(c.wide ? -5.0 : 0.0, 0.1);
    // Rows of unequal norm, so the L1's decoder-norm weight matters.
    sae.decoder.mul_(torch::rand({units, 1}) + 0.5);
    sae.output_bias.normal_(0, 0.1);
    if (sae.log_threshold.defined()) {
      sae.log_threshold.copy_(torch::empty({units}).uniform_(0.05, 0.6).log());
    }
    if (sae.threshold_sum.defined()) {
      sae.threshold_sum.fill_(0.3);  // A threshold of 0.3 from one step.
      sae.threshold_weight.fill_(1);
    }
  }
  sae.train(c.training);
  const torch::Tensor x = torch::randn({16, 12});
  for (const auto& item : sae.named_parameters()) {
    out.insert(absl::StrCat(c.name, ".", item.key()),
               item.value().detach().clone());
  }
  for (const auto& item : sae.named_buffers()) {
    out.insert(absl::StrCat(c.name, ".", item.key()),
               item.value().detach().clone());
  }
  const torch::Tensor y = sae.Forward(x, HookPoint());
  torch::Tensor loss = NormalisedMse(y, x);
  if (sae.AuxiliaryLoss().defined()) loss = loss + sae.AuxiliaryLoss();
  loss.backward();
  out.insert(c.name + ".x", x);
  out.insert(c.name + ".out", y.detach());
  out.insert(c.name + ".loss", loss.detach());
  for (const auto& item : sae.named_parameters()) {
    out.insert(absl::StrCat(c.name, ".grad.", item.key()), item.value().grad());
  }
  for (const auto& item : sae.named_buffers()) {
    out.insert(absl::StrCat(c.name, ".after.", item.key()),
               item.value().detach().clone());
  }
}

absl::Status Run() {
  const std::string path = absl::GetFlag(FLAGS_out);
  if (path.empty()) return absl::InvalidArgumentError("--out is required");
  torch::manual_seed(7);
  c10::Dict<std::string, torch::Tensor> out;
  for (const Case& c : std::vector<Case>{
           {"relu_l1", config::FfnReplacement::RELU_L1, 0.3, true},
           {"jump_relu", config::FfnReplacement::JUMP_RELU, 0.05, true},
           {"batch_topk_train", config::FfnReplacement::BATCH_TOPK, 0, true},
           {"batch_topk_eval", config::FfnReplacement::BATCH_TOPK, 0, false},
           {"relu_l1_wide", config::FfnReplacement::RELU_L1, 0.3, true, true},
           {"jump_relu_wide", config::FfnReplacement::JUMP_RELU, 0.05, true,
            true},
           {"batch_topk_train_wide", config::FfnReplacement::BATCH_TOPK, 0,
            true, true},
           {"batch_topk_eval_wide", config::FfnReplacement::BATCH_TOPK, 0,
            false, true}}) {
    AddCase(c, out);
  }
  const std::vector<char> bytes = torch::pickle_save(out);
  return WriteFileAtomically(path,
                             absl::string_view(bytes.data(), bytes.size()));
}

}  // namespace
}  // namespace sparse_layers::layers

int main(int argc, char** argv) {
  sparse_layers::InitMain(argc, argv,
                          "Writes sae_reference_test's numbers of each rule.");
  return sparse_layers::RunMain(sparse_layers::layers::Run);
}
