#include "models/checkpoints/nanogpt_checkpoint.h"

#include <algorithm>
#include <map>
#include <memory>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/common/status_macros.h"
#include "models/checkpoints/checkpoint_tensors.h"
#include "models/checkpoints/torch_pickle.h"

namespace sparse_layers::layers {
namespace {

using c10::IValue;

// A value in an error line (at most 40 characters, no newline).
std::string Text(const IValue& value) {
  if (value.isTensor()) return "a tensor";
  std::ostringstream text;
  text << value;
  std::string line = text.str().substr(0, 40);
  std::replace(line.begin(), line.end(), '\n', ' ');
  return line;
}

// An entry of a dict with string keys, or null.
const IValue* Find(const c10::impl::GenericDict& dict,
                   const std::string& name) {
  auto it = dict.find(IValue(name));
  return it == dict.end() ? nullptr : &it->value();
}

absl::StatusOr<c10::impl::GenericDict> Dict(const std::string& path,
                                            const c10::impl::GenericDict& root,
                                            const std::string& name) {
  const IValue* value = Find(root, name);
  if (value == nullptr || !value->isGenericDict()) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": no '", name, "' dict (not a nanoGPT checkpoint)"));
  }
  return value->toGenericDict();
}

// model_args' fields, with errors "<path>: model_args['n_head'] ...".
class ModelArgs {
 public:
  ModelArgs(std::string path, c10::impl::GenericDict args)
      : path_(std::move(path)), args_(std::move(args)) {}

  absl::Status Error(const std::string& name, const std::string& what) const {
    return absl::InvalidArgumentError(
        absl::StrCat(path_, ": model_args['", name, "'] ", what));
  }
  absl::StatusOr<int64_t> PositiveInt(const std::string& name) const {
    const IValue* value = Find(args_, name);
    if (value == nullptr) return Error(name, "missing");
    if (!value->isInt() || value->toInt() < 1) {
      return Error(name, "must be a positive integer, got " + Text(*value));
    }
    return value->toInt();
  }
  absl::StatusOr<bool> Bool(const std::string& name) const {
    const IValue* value = Find(args_, name);
    if (value == nullptr) return Error(name, "missing");
    if (!value->isBool()) {
      return Error(name, "must be True or False, got " + Text(*value));
    }
    return value->toBool();
  }

 private:
  std::string path_;
  c10::impl::GenericDict args_;
};

// nanoGPT's GPT (model.py's GPTConfig).
absl::StatusOr<GptOptions> Options(const ModelArgs& args,
                                   int64_t max_context_length,
                                   int64_t& positions) {
  GptOptions options;
  ASSIGN_OR_RETURN(options.vocab_size, args.PositiveInt("vocab_size"));
  ASSIGN_OR_RETURN(options.d_model, args.PositiveInt("n_embd"));
  ASSIGN_OR_RETURN(options.n_layers, args.PositiveInt("n_layer"));
  ASSIGN_OR_RETURN(options.n_heads, args.PositiveInt("n_head"));
  ASSIGN_OR_RETURN(positions, args.PositiveInt("block_size"));
  ASSIGN_OR_RETURN(options.bias, args.Bool("bias"));
  if (options.d_model % options.n_heads != 0) {
    return args.Error(
        "n_embd", absl::StrCat(options.d_model, " is not a multiple of n_head ",
                               options.n_heads));
  }
  options.context_length = std::min(positions, max_context_length);
  options.layer_norm_without_bias = !options.bias;
  options.ffn = "gelu_mlp";
  options.d_ffn = 4 * options.d_model;
  options.norm_eps = 1e-5;
  options.tie_embeddings = true;
  return options;
}

// The state dict's tensors.
class StateDict : public CheckpointTensors {
 public:
  static absl::StatusOr<std::unique_ptr<StateDict>> Read(
      const std::string& path, const c10::impl::GenericDict& model) {
    auto state = std::unique_ptr<StateDict>(new StateDict(path));
    for (const auto& entry : model) {
      if (!entry.key().isString() || !entry.value().isTensor()) {
        return absl::InvalidArgumentError(
            absl::StrCat(path, ": model entry ", Text(entry.key()),
                         " is not a named tensor"));
      }
      state->tensors_[entry.key().toStringRef()] = entry.value().toTensor();
    }
    return state;
  }

  const std::string& path() const override { return path_; }
  bool Contains(const std::string& name) const override {
    return tensors_.count(name) > 0;
  }
  absl::StatusOr<torch::Tensor> ReadFloat(
      const std::string& name,
      const std::vector<int64_t>& shape) const override {
    const torch::Tensor& tensor = tensors_.at(name);
    if (!tensor.sizes().equals(shape)) {
      return absl::InvalidArgumentError(
          absl::StrCat(path_, ": tensor '", name, "' has shape [",
                       absl::StrJoin(tensor.sizes(), ", "), "], expected [",
                       absl::StrJoin(shape, ", "), "]"));
    }
    const auto dtype = tensor.scalar_type();
    if (dtype != torch::kFloat && dtype != torch::kHalf &&
        dtype != torch::kBFloat16) {
      return absl::InvalidArgumentError(absl::StrCat(
          path_, ": unsupported dtype ", c10::toString(dtype), " for tensor '",
          name, "' (float32, float16 and bfloat16 read as float32)"));
    }
    return tensor.to(torch::kFloat).contiguous();
  }
  std::vector<std::pair<std::string, std::string>> All() const override {
    std::vector<std::pair<std::string, std::string>> all;
    for (const auto& [name, tensor] : tensors_) all.emplace_back(name, path_);
    return all;
  }
  const torch::Tensor& Get(const std::string& name) const {
    return tensors_.at(name);
  }

 private:
  explicit StateDict(std::string path) : path_(std::move(path)) {}

  std::string path_;
  std::map<std::string, torch::Tensor> tensors_;
};

}  // namespace

absl::StatusOr<HuggingFaceModel> LoadNanoGptCheckpoint(
    const std::string& path, int64_t max_context_length) {
  if (max_context_length < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "max_context_length must be >= 1, got ", max_context_length));
  }
  ASSIGN_OR_RETURN(const IValue root, ReadTorchSave(path));
  if (!root.isGenericDict()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": holds no dict (not a nanoGPT checkpoint)"));
  }
  ASSIGN_OR_RETURN(const c10::impl::GenericDict model,
                   Dict(path, root.toGenericDict(), "model"));
  ASSIGN_OR_RETURN(c10::impl::GenericDict args,
                   Dict(path, root.toGenericDict(), "model_args"));
  int64_t positions = 0;
  ASSIGN_OR_RETURN(
      const GptOptions options,
      Options(ModelArgs(path, std::move(args)), max_context_length, positions));
  ASSIGN_OR_RETURN(const std::unique_ptr<StateDict> state,
                   StateDict::Read(path, model));
  // torch.compile's wrapper prefixes every name.
  const std::string outer =
      PrefixIfPresent(*state, "_orig_mod.", "transformer.wte.weight");
  TensorMap tensors(*state, outer + "transformer.");
  Gpt2Layout layout;
  layout.conv1d = false;
  layout.bias = options.bias;
  layout.unembedding = outer + "lm_head.weight";
  RETURN_IF_ERROR(Gpt2Tensors(options, positions, layout, tensors));
  // lm_head is wte (tied); one that is not cannot be loaded as tied.
  const std::string wte = outer + "transformer.wte.weight";
  if (state->Contains(layout.unembedding) &&
      (state->Get(layout.unembedding).scalar_type() !=
           state->Get(wte).scalar_type() ||
       !state->Get(layout.unembedding).equal(state->Get(wte)))) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": tensor '", layout.unembedding, "' differs from '",
                     wte, "' (nanoGPT ties them)"));
  }
  RETURN_IF_ERROR(tensors.CheckAllUsed("nanogpt"));
  ASSIGN_OR_RETURN(std::shared_ptr<GptImpl> gpt, GptImpl::Create(options));
  RETURN_IF_ERROR(tensors.CopyInto(*gpt));
  gpt->eval();
  return HuggingFaceModel{"nanogpt", std::move(gpt)};
}

}  // namespace sparse_layers::layers
