#include "layers/models/checkpoint.h"

#include <torch/serialize.h>

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tools/common/digest.h"
#include "tools/common/file_io.h"

namespace sparse_layers::layers {
namespace {

// v2 added the content digest; a v1 file fails the format check by name.
constexpr char kFormat[] = "sparse_layers.checkpoint.v2";
constexpr char kDigestKey[] = "sha256";
using Dict = c10::impl::GenericDict;

// SHA-256 over every entry but the digest itself, in key order: names, dtypes,
// shapes and tensor bytes, so a changed weight byte cannot load silently (the
// pickle has no checksum of its own). Streams tensor storage without copies.
std::string ContentDigest(const Dict& dict) {
  std::vector<std::string> keys;
  for (const auto& entry : dict) {
    const std::string& key = entry.key().toStringRef();
    if (key != kDigestKey) keys.push_back(key);
  }
  std::sort(keys.begin(), keys.end());
  Sha256 sha;
  for (const std::string& key : keys) {
    const c10::IValue value = dict.at(key);
    sha.Update(key);
    if (value.isTensor()) {
      const torch::Tensor tensor = value.toTensor().contiguous();
      sha.Update(absl::StrCat("\0tensor\0", c10::toString(tensor.scalar_type()),
                              c10::str(tensor.sizes()), "\0"));
      sha.Update(absl::string_view(static_cast<const char*>(tensor.data_ptr()),
                                   tensor.nbytes()));
    } else if (value.isInt()) {
      sha.Update(absl::StrCat("\0int\0", value.toInt(), "\0"));
    } else {
      const std::string& text = value.toStringRef();
      sha.Update(absl::StrCat("\0string\0", text.size(), "\0"));
      sha.Update(text);
    }
  }
  return sha.HexDigest();
}

// LibTorch keys optimiser state by the parameter's TensorImpl address.
std::string StateKey(const torch::Tensor& parameter) {
  return c10::guts::to_string(parameter.unsafeGetTensorImpl());
}

std::string OptimizerKey(size_t group, size_t index, const char* field) {
  return absl::StrCat("optimizer.", group, ".", index, ".", field);
}

absl::StatusOr<Dict> ReadDict(const std::string& path) {
  absl::StatusOr<std::string> bytes = ReadFileToString(path);
  if (!bytes.ok()) return bytes.status();
  try {
    const c10::IValue value =
        torch::pickle_load(std::vector<char>(bytes->begin(), bytes->end()));
    if (!value.isGenericDict()) throw c10::Error("not a dictionary", "");
    Dict dict = value.toGenericDict();
    if (!dict.contains("format") ||
        dict.at("format").toStringRef() != kFormat) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, " is not a ", kFormat, " checkpoint"));
    }
    if (!dict.contains(kDigestKey)) {
      return absl::DataLossError(absl::StrCat(path, " lacks its ", kDigestKey));
    }
    const std::string actual = ContentDigest(dict);
    const std::string& recorded = dict.at(kDigestKey).toStringRef();
    if (actual != recorded) {
      return absl::DataLossError(absl::StrCat(
          "checkpoint ", path, ": content SHA-256 ", actual.substr(0, 12),
          "... differs from ", recorded.substr(0, 12),
          "... recorded inside it (the file changed after it was written)"));
    }
    return dict;
  } catch (const c10::Error& error) {
    return absl::DataLossError(absl::StrCat(
        "cannot read checkpoint ", path, ": ", error.what_without_backtrace()));
  }
}

}  // namespace

absl::Status SaveCheckpoint(const std::string& path,
                            const torch::nn::Module& model,
                            torch::optim::AdamW* optimizer,
                            const CheckpointState& state) {
  std::vector<char> bytes;
  try {
    Dict dict(c10::StringType::get(), c10::AnyType::get());
    dict.insert("format", std::string(kFormat));
    dict.insert("step", state.step);
    dict.insert("config", state.config_text);
    dict.insert("log", state.log_csv);
    dict.insert("rng", at::detail::getDefaultCPUGenerator().get_state());
    for (const auto& item : model.named_parameters()) {
      dict.insert("model." + item.key(), item.value().detach().contiguous());
    }
    for (const auto& item : model.named_buffers()) {
      dict.insert("model." + item.key(), item.value().detach().contiguous());
    }
    if (optimizer != nullptr) {
      const auto& groups = optimizer->param_groups();
      for (size_t g = 0; g < groups.size(); ++g) {
        for (size_t i = 0; i < groups[g].params().size(); ++i) {
          auto it = optimizer->state().find(StateKey(groups[g].params()[i]));
          if (it == optimizer->state().end()) continue;  // Not stepped yet.
          const auto& adam =
              static_cast<const torch::optim::AdamWParamState&>(*it->second);
          dict.insert(OptimizerKey(g, i, "step"), adam.step());
          dict.insert(OptimizerKey(g, i, "exp_avg"), adam.exp_avg());
          dict.insert(OptimizerKey(g, i, "exp_avg_sq"), adam.exp_avg_sq());
        }
      }
    }
    dict.insert(kDigestKey, ContentDigest(dict));
    bytes = torch::pickle_save(dict);
  } catch (const c10::Error& error) {
    return absl::InternalError(absl::StrCat("cannot serialise checkpoint ",
                                            path, ": ",
                                            error.what_without_backtrace()));
  }
  return WriteFileAtomically(path,
                             absl::string_view(bytes.data(), bytes.size()));
}

absl::StatusOr<CheckpointState> LoadCheckpoint(const std::string& path,
                                               torch::nn::Module& model,
                                               torch::optim::AdamW* optimizer) {
  absl::StatusOr<Dict> dict = ReadDict(path);
  if (!dict.ok()) return dict.status();
  CheckpointState state;
  state.step = dict->at("step").toInt();
  state.config_text = dict->at("config").toStringRef();
  state.log_csv = dict->at("log").toStringRef();
  at::Generator generator = at::detail::getDefaultCPUGenerator();
  generator.set_state(dict->at("rng").toTensor());
  torch::NoGradGuard no_grad;
  auto restore = [&](const std::string& name,
                     torch::Tensor& target) -> absl::Status {
    const std::string key = "model." + name;
    if (!dict->contains(key)) {
      return absl::DataLossError(absl::StrCat(path, " lacks ", key));
    }
    const torch::Tensor saved = dict->at(key).toTensor();
    if (saved.sizes() != target.sizes()) {
      return absl::DataLossError(
          absl::StrCat(path, ": ", key, " has shape ", c10::str(saved.sizes()),
                       ", the model ", c10::str(target.sizes())));
    }
    target.copy_(saved);
    return absl::OkStatus();
  };
  for (auto& item : model.named_parameters()) {
    if (absl::Status status = restore(item.key(), item.value()); !status.ok()) {
      return status;
    }
  }
  for (auto& item : model.named_buffers()) {
    if (absl::Status status = restore(item.key(), item.value()); !status.ok()) {
      return status;
    }
  }
  if (optimizer != nullptr) {
    const auto& groups = optimizer->param_groups();
    for (size_t g = 0; g < groups.size(); ++g) {
      for (size_t i = 0; i < groups[g].params().size(); ++i) {
        if (!dict->contains(OptimizerKey(g, i, "step"))) continue;
        auto adam = std::make_unique<torch::optim::AdamWParamState>();
        adam->step(dict->at(OptimizerKey(g, i, "step")).toInt());
        adam->exp_avg(
            dict->at(OptimizerKey(g, i, "exp_avg")).toTensor().clone());
        adam->exp_avg_sq(
            dict->at(OptimizerKey(g, i, "exp_avg_sq")).toTensor().clone());
        optimizer->state()[StateKey(groups[g].params()[i])] = std::move(adam);
      }
    }
  }
  return state;
}

absl::StatusOr<std::string> ReadCheckpointConfig(const std::string& path) {
  absl::StatusOr<Dict> dict = ReadDict(path);
  if (!dict.ok()) return dict.status();
  return dict->at("config").toStringRef();
}

}  // namespace sparse_layers::layers
