#include "datasets/text/nanogpt_vocabulary.h"

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "base/common/status_macros.h"
#include "models/checkpoints/torch_pickle.h"

namespace sparse_layers::datasets {
namespace {

using c10::IValue;

const IValue* Find(const c10::impl::GenericDict& dict, const IValue& key) {
  auto it = dict.find(key);
  return it == dict.end() ? nullptr : &it->value();
}

}  // namespace

absl::StatusOr<std::string> CharsVocabularyFromMetaPkl(
    const std::string& meta_path, char eos) {
  auto error = [&meta_path](const std::string& what) {
    return absl::InvalidArgumentError(absl::StrCat(meta_path, ": ", what));
  };
  ASSIGN_OR_RETURN(const IValue meta, layers::ReadPickle(meta_path));
  if (!meta.isGenericDict()) return error("not a dict");
  const c10::impl::GenericDict root = meta.toGenericDict();
  const IValue* itos = Find(root, IValue("itos"));
  if (itos == nullptr || !itos->isGenericDict()) return error("no 'itos' dict");
  const c10::impl::GenericDict by_id = itos->toGenericDict();
  const int64_t size = static_cast<int64_t>(by_id.size());
  std::string chars;
  for (int64_t id = 0; id < size; ++id) {
    const IValue* piece = Find(by_id, IValue(id));
    if (piece == nullptr) {
      return error(absl::StrCat("itos has ", size, " entries but no id ", id));
    }
    if (!piece->isString() || piece->toStringRef().size() != 1 ||
        piece->toStringRef()[0] == '\n') {
      return error(
          absl::StrCat("itos[", id,
                       "] is not one byte other than a newline (a .chars "
                       "vocabulary holds one byte per id on one line)"));
    }
    chars += piece->toStringRef();
  }
  if (const IValue* stoi = Find(root, IValue("stoi")); stoi != nullptr) {
    if (!stoi->isGenericDict() ||
        stoi->toGenericDict().size() != by_id.size()) {
      return error("stoi is not the inverse of itos");
    }
    for (int64_t id = 0; id < size; ++id) {
      const IValue* back =
          Find(stoi->toGenericDict(), IValue(std::string(1, chars[id])));
      if (back == nullptr || !back->isInt() || back->toInt() != id) {
        return error(absl::StrCat("stoi does not map itos[", id, "] to ", id));
      }
    }
  }
  if (const IValue* n = Find(root, IValue("vocab_size"));
      n != nullptr && (!n->isInt() || n->toInt() != size)) {
    return error(absl::StrCat("vocab_size is not itos's size ", size));
  }
  if (chars.find(eos) == std::string::npos) {
    return error(absl::StrCat("the end-of-sequence character '",
                              absl::CEscape(std::string(1, eos)),
                              "' is not in the vocabulary"));
  }
  return absl::StrCat(chars, "\n", std::string(1, eos), "\n");
}

}  // namespace sparse_layers::datasets
