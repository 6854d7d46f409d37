// Runs a Hugging Face checkpoint (LoadHuggingFaceModel), or a nanoGPT ckpt.pt
// (LoadNanoGptCheckpoint), on token ids and writes
// its logits and named hook activations as float32 safetensors: what the
// reference parity tests compare against independent PyTorch models.
#include <filesystem>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/common/status_macros.h"
#include "models/checkpoints/hf_checkpoint.h"
#include "models/checkpoints/nanogpt_checkpoint.h"
#include "models/checkpoints/safetensors.h"
#include "ops/backend/torch_init.h"

ABSL_FLAG(std::string, checkpoint, "",
          "Directory with config.json and model.safetensors, or a nanoGPT "
          "ckpt.pt file.");
ABSL_FLAG(std::string, tokens, "",
          "Token ids: comma-separated, rows of equal length separated by ';'.");
ABSL_FLAG(std::vector<std::string>, hooks, {},
          "Hook points to capture, e.g. blocks.0.hook_resid_post.");
ABSL_FLAG(std::string, out, "", "Output .safetensors (logits and hooks).");

namespace sparse_layers::layers {
namespace {

absl::StatusOr<torch::Tensor> ParseTokens(const std::string& text) {
  std::vector<std::vector<int64_t>> rows;
  for (absl::string_view row : absl::StrSplit(text, ';')) {
    rows.emplace_back();
    for (absl::string_view item : absl::StrSplit(row, ',')) {
      int64_t id;
      if (!absl::SimpleAtoi(item, &id) || id < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("--tokens: '", item, "' is not a token id"));
      }
      rows.back().push_back(id);
    }
    if (rows.back().size() != rows.front().size()) {
      return absl::InvalidArgumentError("--tokens: rows differ in length");
    }
  }
  torch::Tensor tokens =
      torch::empty({static_cast<int64_t>(rows.size()),
                    static_cast<int64_t>(rows.front().size())},
                   torch::kLong);
  for (size_t i = 0; i < rows.size(); ++i) {
    for (size_t j = 0; j < rows[i].size(); ++j) {
      tokens[i][j] = rows[i][j];
    }
  }
  return tokens;
}

absl::Status Run() {
  RETURN_IF_ERROR(
      FirstError({RequiredFlag(FLAGS_checkpoint), RequiredFlag(FLAGS_tokens),
                  RequiredFlag(FLAGS_out)}));
  const std::string checkpoint = absl::GetFlag(FLAGS_checkpoint);
  ASSIGN_OR_RETURN(const HuggingFaceModel loaded,
                   std::filesystem::is_regular_file(checkpoint)
                       ? LoadNanoGptCheckpoint(checkpoint)
                       : LoadHuggingFaceModel(checkpoint));
  ASSIGN_OR_RETURN(const torch::Tensor tokens,
                   ParseTokens(absl::GetFlag(FLAGS_tokens)));
  if (tokens.max().item<int64_t>() >= loaded.model->options().vocab_size) {
    return absl::InvalidArgumentError("--tokens: id past the vocabulary");
  }
  const std::vector<std::string> hooks = absl::GetFlag(FLAGS_hooks);
  std::vector<std::vector<torch::Tensor>> captured(hooks.size());
  for (size_t i = 0; i < hooks.size(); ++i) {
    HookPoint* hook = loaded.model->FindHook(hooks[i]);
    if (hook == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("--hooks: no hook point '", hooks[i], "'"));
    }
    hook->Add(CaptureHook(&captured[i]));
  }
  torch::NoGradGuard no_grad;
  std::map<std::string, torch::Tensor> out = {
      {"logits", loaded.model->forward(tokens)}};
  for (size_t i = 0; i < hooks.size(); ++i) {
    if (captured[i].size() != 1) {
      return absl::InternalError(absl::StrCat("hook '", hooks[i], "' fired ",
                                              captured[i].size(), " times"));
    }
    out[hooks[i]] = captured[i][0];
  }
  return WriteSafetensors(absl::GetFlag(FLAGS_out), out);
}

}  // namespace
}  // namespace sparse_layers::layers

int main(int argc, char** argv) {
  sparse_layers::InitMain(
      argc, argv,
      "hf_forward --checkpoint=DIR|ckpt.pt --tokens=1,2,3 [--hooks=a,b] "
      "--out=F: logits and hook activations of a Hugging Face or nanoGPT "
      "checkpoint");
  return sparse_layers::RunMain([] { return sparse_layers::layers::Run(); });
}
