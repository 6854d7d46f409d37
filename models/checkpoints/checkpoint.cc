#include "models/checkpoints/checkpoint.h"

#include <torch/serialize.h>

#include <algorithm>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/common/digest.h"
#include "base/common/file_io.h"
#include "base/common/status_macros.h"

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

// A tensor with its own contiguous storage: pickling a view would write the
// whole buffer it views.
torch::Tensor Owned(const torch::Tensor& tensor) {
  return tensor.detach().clone(torch::MemoryFormat::Contiguous);
}

std::string OptimizerKey(size_t group, size_t index, const char* field) {
  return absl::StrCat("optimizer.", group, ".", index, ".", field);
}

absl::StatusOr<Dict> ReadDict(const std::string& path) {
  ASSIGN_OR_RETURN(const std::string bytes, ReadFileToString(path));
  try {
    const c10::IValue value =
        torch::pickle_load(std::vector<char>(bytes.begin(), bytes.end()));
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
                            const AdamWState* optimizer,
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
      dict.insert("model." + item.key(), Owned(item.value()));
    }
    for (const auto& item : model.named_buffers()) {
      dict.insert("model." + item.key(), Owned(item.value()));
    }
    if (optimizer != nullptr) {
      for (size_t g = 0; g < optimizer->size(); ++g) {
        for (size_t i = 0; i < (*optimizer)[g].size(); ++i) {
          const AdamWSlot& slot = (*optimizer)[g][i];
          if (slot.step == 0) continue;  // Not stepped yet.
          dict.insert(OptimizerKey(g, i, "step"), slot.step);
          dict.insert(OptimizerKey(g, i, "exp_avg"), Owned(slot.exp_avg));
          dict.insert(OptimizerKey(g, i, "exp_avg_sq"), Owned(slot.exp_avg_sq));
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
                                               AdamWState* optimizer) {
  ASSIGN_OR_RETURN(Dict dict, ReadDict(path));
  CheckpointState state;
  state.step = dict.at("step").toInt();
  state.config_text = dict.at("config").toStringRef();
  state.log_csv = dict.at("log").toStringRef();
  at::Generator generator = at::detail::getDefaultCPUGenerator();
  generator.set_state(dict.at("rng").toTensor());
  torch::NoGradGuard no_grad;
  auto restore = [&](const std::string& name,
                     torch::Tensor& target) -> absl::Status {
    const std::string key = "model." + name;
    if (!dict.contains(key)) {
      return absl::DataLossError(absl::StrCat(path, " lacks ", key));
    }
    const torch::Tensor saved = dict.at(key).toTensor();
    if (saved.sizes() != target.sizes()) {
      return absl::DataLossError(
          absl::StrCat(path, ": ", key, " has shape ", c10::str(saved.sizes()),
                       ", the model ", c10::str(target.sizes())));
    }
    target.copy_(saved);
    return absl::OkStatus();
  };
  for (auto& item : model.named_parameters()) {
    RETURN_IF_ERROR(restore(item.key(), item.value()));
  }
  for (auto& item : model.named_buffers()) {
    RETURN_IF_ERROR(restore(item.key(), item.value()));
  }
  if (optimizer != nullptr) {
    optimizer->clear();
    for (const auto& entry : dict) {
      const std::string& key = entry.key().toStringRef();
      const std::vector<absl::string_view> parts = absl::StrSplit(key, '.');
      size_t g = 0, i = 0;
      if (parts.size() != 4 || parts[0] != "optimizer" || parts[3] != "step" ||
          !absl::SimpleAtoi(parts[1], &g) || !absl::SimpleAtoi(parts[2], &i)) {
        continue;
      }
      const std::string exp_avg = OptimizerKey(g, i, "exp_avg");
      const std::string exp_avg_sq = OptimizerKey(g, i, "exp_avg_sq");
      if (!dict.contains(exp_avg) || !dict.contains(exp_avg_sq)) {
        return absl::DataLossError(
            absl::StrCat(path, " has ", key, " without its moments"));
      }
      if (optimizer->size() <= g) optimizer->resize(g + 1);
      if ((*optimizer)[g].size() <= i) (*optimizer)[g].resize(i + 1);
      AdamWSlot& slot = (*optimizer)[g][i];
      slot.step = entry.value().toInt();
      slot.exp_avg = dict.at(exp_avg).toTensor();
      slot.exp_avg_sq = dict.at(exp_avg_sq).toTensor();
    }
  }
  return state;
}

absl::StatusOr<std::string> ReadCheckpointConfig(const std::string& path) {
  ASSIGN_OR_RETURN(Dict dict, ReadDict(path));
  return dict.at("config").toStringRef();
}

}  // namespace sparse_layers::layers
