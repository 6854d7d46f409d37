// What the pretrained-checkpoint loaders share (hf_checkpoint.h,
// nanogpt_checkpoint.h): a checkpoint's named tensors, however stored, mapped
// onto GptImpl's parameters with one-line errors naming the file, and GPT-2's
// tensor layout, which nanoGPT keeps but for Linear weights and optional
// biases.
#ifndef SPARSE_LAYERS_MODELS_CHECKPOINTS_CHECKPOINT_TENSORS_H_
#define SPARSE_LAYERS_MODELS_CHECKPOINTS_CHECKPOINT_TENSORS_H_

#include <torch/torch.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "models/gpt.h"

namespace sparse_layers::layers {

// A checkpoint's named tensors.
class CheckpointTensors {
 public:
  virtual ~CheckpointTensors() = default;
  // What a missing tensor's error names (the file, or a shard index).
  virtual const std::string& path() const = 0;
  virtual bool Contains(const std::string& name) const = 0;
  // The tensor `name` (present) as float32 of exactly `shape`; an error (a
  // wrong shape, an unsupported dtype) is one line naming its file.
  virtual absl::StatusOr<torch::Tensor> ReadFloat(
      const std::string& name, const std::vector<int64_t>& shape) const = 0;
  // Every tensor name with the path of the file holding it.
  virtual std::vector<std::pair<std::string, std::string>> All() const = 0;
};

// `prefix` when the checkpoint holds prefix + probe, else "".
std::string PrefixIfPresent(const CheckpointTensors& tensors,
                            const std::string& prefix,
                            const std::string& probe);

// The tensors of a checkpoint, read by name (the architecture's prefix added,
// unless `top_level`) with their expected shapes, and the model parameters
// they become.
class TensorMap {
 public:
  TensorMap(const CheckpointTensors& files, std::string prefix)
      : files_(files), prefix_(std::move(prefix)) {}

  absl::StatusOr<torch::Tensor> Read(const std::string& name,
                                     const std::vector<int64_t>& shape,
                                     bool top_level = false);
  // A tensor the file may hold that the model does not need.
  void Ignore(const std::string& name) { used_.insert(name); }

  // param <- the tensor `name` as is.
  absl::Status Copy(const std::string& param, const std::string& name,
                    const std::vector<int64_t>& shape);
  void Set(const std::string& param, torch::Tensor value) {
    params_[param] = std::move(value);
  }

  // Every tensor of the file was read, bar the attention masks and rotary
  // frequencies that older transformers versions and nanoGPT (without flash
  // attention) save as buffers.
  absl::Status CheckAllUsed(const std::string& model_type) const;

  // Copies every parameter of `model` from its tensor.
  absl::Status CopyInto(GptImpl& model);

 private:
  const CheckpointTensors& files_;
  std::string prefix_;
  std::set<std::string> used_;
  std::map<std::string, torch::Tensor> params_;
};

// A LayerNorm's weight and bias (or an RMSNorm's weight) as `param`.
absl::Status Norm(const std::string& param, const std::string& name,
                  int64_t width, bool bias, TensorMap& tensors);

// The unembedding: `name` (top level) when untied; a copy of the tied one in
// the file is ignored.
absl::Status Unembedding(const GptOptions& options, const std::string& name,
                         TensorMap& tensors);

// GPT-2's names: wte, wpe, h.<i>.{ln_1, attn.c_attn, attn.c_proj, ln_2,
// mlp.c_fc, mlp.c_proj}, ln_f, and the unembedding `unembedding`. Hugging
// Face's GPT-2 stores Conv1D weights [in, out] (Radford et al. 2019 released
// them so) with biases everywhere; nanoGPT nn.Linear weights [out, in] with
// biases (LayerNorms' too) only when its bias flag is set. wpe holds
// `positions` rows, cut to o.context_length.
struct Gpt2Layout {
  bool conv1d = true;
  bool bias = true;
  std::string unembedding = "lm_head.weight";
};
absl::Status Gpt2Tensors(const GptOptions& o, int64_t positions,
                         const Gpt2Layout& layout, TensorMap& tensors);

}  // namespace sparse_layers::layers

#endif  // SPARSE_LAYERS_MODELS_CHECKPOINTS_CHECKPOINT_TENSORS_H_
