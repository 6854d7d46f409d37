#include "layers/models/hf_test_checkpoint.h"

#include <filesystem>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "layers/models/safetensors.h"
#include "tools/common/file_io.h"

namespace sparse_layers::layers {

std::map<std::string, torch::Tensor> TinyGpt2Tensors(int64_t vocab_size) {
  torch::manual_seed(0);
  std::map<std::string, torch::Tensor> t = {
      {"transformer.wte.weight", torch::randn({vocab_size, 8})},
      {"transformer.wpe.weight", torch::randn({8, 8})},
      {"transformer.ln_f.weight", torch::randn({8})},
      {"transformer.ln_f.bias", torch::randn({8})}};
  for (int i = 0; i < 2; ++i) {
    const std::string h = absl::StrCat("transformer.h.", i, ".");
    for (const char* norm : {"ln_1", "ln_2"}) {
      t[h + norm + ".weight"] = torch::randn({8});
      t[h + norm + ".bias"] = torch::randn({8});
    }
    for (const auto& [name, in, out] :
         {std::tuple<const char*, int, int>{"attn.c_attn", 8, 24},
          {"attn.c_proj", 8, 8},
          {"mlp.c_fc", 8, 32},
          {"mlp.c_proj", 32, 8}}) {
      t[h + name + ".weight"] = torch::randn({in, out});
      t[h + name + ".bias"] = torch::randn({out});
    }
  }
  return t;
}

absl::Status WriteHuggingFaceCheckpoint(
    const std::string& dir, const std::string& config,
    const std::map<std::string, torch::Tensor>& tensors) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (absl::Status s = WriteFileAtomically(dir + "/config.json", config);
      !s.ok()) {
    return s;
  }
  return WriteSafetensors(dir + "/model.safetensors", tensors);
}

}  // namespace sparse_layers::layers
