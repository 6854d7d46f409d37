// Files that Python's torch.save and pickle write, read without Python:
// nanoGPT's ckpt.pt (a torch.save zip of dicts, an OrderedDict state_dict and
// an optimizer state) and its meta.pkl (a plain pickle of dicts).
//
// LibTorch's own readers do not cope with them (measured with libtorch 1.13 on
// a ckpt.pt written by nanogpt_parity_test.py): torch::pickle_load reads every
// collections.OrderedDict, so every state_dict, as None ("Expected GenericDict
// but got None"), applies BUILD (an OrderedDict's _metadata) as a call, moves
// storages saved on a GPU to CUDA, and lacks the opcodes of protocol 4
// (MEMOIZE, SHORT_BINUNICODE, FRAME) that pickle.dump writes by default. So the
// pickle stream is read here, by a small unpickler of the opcodes Python's
// pickler emits for dicts, lists, tuples, strings, numbers and tensors, while
// the zip container is read by LibTorch's PyTorchStreamReader.
#ifndef SPARSE_LAYERS_MODELS_CHECKPOINTS_TORCH_PICKLE_H_
#define SPARSE_LAYERS_MODELS_CHECKPOINTS_TORCH_PICKLE_H_

#include <torch/torch.h>

#include <string>

#include "absl/status/statusor.h"

namespace sparse_layers::layers {

// The object of a torch.save zip file: dicts (OrderedDicts too, their
// attributes dropped) as GenericDict, lists, tuples, str and bytes as strings,
// int, float, bool, None, and tensors as CPU tensors in their saved dtype,
// whatever device they were saved from (tensors sharing a storage share it
// here). Any other object (an instance of a Python class, a numpy scalar) reads
// as None. Every error is one line naming the file.
absl::StatusOr<c10::IValue> ReadTorchSave(const std::string& path);

// A plain pickle file without tensors, read as ReadTorchSave reads objects.
absl::StatusOr<c10::IValue> ReadPickle(const std::string& path);

}  // namespace sparse_layers::layers

#endif  // SPARSE_LAYERS_MODELS_CHECKPOINTS_TORCH_PICKLE_H_
