#include "models/checkpoints/hf_test_checkpoint.h"

#include <filesystem>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/common/file_io.h"
#include "base/common/status_macros.h"
#include "models/checkpoints/safetensors.h"

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
  RETURN_IF_ERROR(WriteFileAtomically(dir + "/config.json", config));
  return WriteSafetensors(dir + "/model.safetensors", tensors);
}

namespace tiny_nanogpt {

using c10::IValue;

Dict NewDict() { return Dict(c10::AnyType::get(), c10::AnyType::get()); }

Dict StateDict(bool bias, const std::string& prefix) {
  Dict state = NewDict();
  auto add = [&](const std::string& name, std::vector<int64_t> shape) {
    state.insert(IValue(prefix + name), IValue(torch::randn(shape)));
  };
  add("transformer.wte.weight", {kVocab, kWidth});
  add("transformer.wpe.weight", {kContext, kWidth});
  const std::vector<std::pair<std::string, std::vector<int64_t>>> layers = {
      {"attn.c_attn", {3 * kWidth, kWidth}},
      {"attn.c_proj", {kWidth, kWidth}},
      {"mlp.c_fc", {4 * kWidth, kWidth}},
      {"mlp.c_proj", {kWidth, 4 * kWidth}}};
  for (const auto& [name, shape] : layers) {
    add("transformer.h.0." + name + ".weight", shape);
    if (bias) add("transformer.h.0." + name + ".bias", {shape[0]});
  }
  for (const char* norm : {"h.0.ln_1", "h.0.ln_2", "ln_f"}) {
    add(std::string("transformer.") + norm + ".weight", {kWidth});
    if (bias) add(std::string("transformer.") + norm + ".bias", {kWidth});
  }
  // nanoGPT without flash attention keeps its causal mask as a buffer.
  add("transformer.h.0.attn.bias", {1, 1, kContext, kContext});
  state.insert(IValue(prefix + "lm_head.weight"),
               state.at(IValue(prefix + "transformer.wte.weight")));
  return state;
}

Dict ModelArgs(bool bias) {
  Dict args = NewDict();
  for (const auto& [name, value] :
       std::vector<std::pair<std::string, int64_t>>{{"n_layer", 1},
                                                    {"n_head", 2},
                                                    {"n_embd", kWidth},
                                                    {"block_size", kContext},
                                                    {"vocab_size", kVocab}}) {
    args.insert(IValue(name), IValue(value));
  }
  args.insert(IValue("bias"), IValue(bias));
  args.insert(IValue("dropout"), IValue(0.0));
  return args;
}

Dict Checkpoint(Dict state, Dict args) {
  Dict checkpoint = NewDict();
  checkpoint.insert(IValue("model"), IValue(state));
  checkpoint.insert(IValue("model_args"), IValue(args));
  checkpoint.insert(IValue("iter_num"), IValue(int64_t{600000}));
  checkpoint.insert(IValue("best_val_loss"), IValue(torch::tensor(1.5)));
  return checkpoint;
}

}  // namespace tiny_nanogpt

}  // namespace sparse_layers::layers
