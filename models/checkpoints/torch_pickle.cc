#include "models/checkpoints/torch_pickle.h"

#include <caffe2/serialize/inline_container.h>

#include <cstring>
#include <functional>
#include <map>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "base/common/file_io.h"
#include "base/common/status_macros.h"

namespace sparse_layers::layers {
namespace {

using c10::IValue;

// A storage's bytes by key (zip record data/<key>), as a flat tensor.
using StorageReader = std::function<absl::StatusOr<torch::Tensor>(
    const std::string& key, c10::ScalarType dtype, int64_t numel)>;

absl::StatusOr<c10::ScalarType> StorageType(const std::string& name) {
  static const auto* types = new std::map<std::string, c10::ScalarType>{
      {"torch.FloatStorage", torch::kFloat},
      {"torch.HalfStorage", torch::kHalf},
      {"torch.BFloat16Storage", torch::kBFloat16},
      {"torch.DoubleStorage", torch::kDouble},
      {"torch.LongStorage", torch::kLong},
      {"torch.IntStorage", torch::kInt},
      {"torch.ShortStorage", torch::kShort},
      {"torch.CharStorage", torch::kChar},
      {"torch.ByteStorage", torch::kByte},
      {"torch.BoolStorage", torch::kBool}};
  auto it = types->find(name);
  if (it == types->end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("unsupported storage type '", name, "'"));
  }
  return it->second;
}

std::vector<int64_t> Ints(const IValue& tuple) {
  std::vector<int64_t> ints;
  for (const IValue& item : tuple.toTupleRef().elements()) {
    ints.push_back(item.toInt());
  }
  return ints;
}

// The pickle virtual machine (Python's pickle module, protocols 2 to 5) for
// the opcodes its pickler writes for dicts, lists, tuples, strings, numbers,
// None, bools and torch.save's tensors.
class Unpickler {
 public:
  Unpickler(absl::string_view data, StorageReader storages)
      : data_(data), storages_(std::move(storages)) {}

  absl::StatusOr<IValue> Run() {
    while (pos_ < data_.size()) {
      const char op = data_[pos_++];
      RETURN_IF_ERROR(Step(op));
      if (op == '.') {
        if (stack_.size() != 1) {
          return Error(absl::StrCat("STOP with ", stack_.size(), " objects"),
                       op);
        }
        return stack_.back().value;
      }
    }
    return absl::InvalidArgumentError("pickle: truncated before STOP");
  }

 private:
  // A stack entry; `callable` for a global (value: "module.name").
  struct Item {
    IValue value;
    bool callable = false;
  };

  absl::Status Error(absl::string_view what, char op) const {
    return absl::InvalidArgumentError(absl::StrCat(
        "pickle: ", what, " at byte ", pos_ - 1,
        op == 0
            ? ""
            : absl::StrCat(" (opcode 0x", absl::Hex(int(uint8_t(op))), ")")));
  }

  absl::StatusOr<absl::string_view> Take(size_t n) {
    if (n > data_.size() - pos_) {
      return absl::InvalidArgumentError("pickle: truncated");
    }
    absl::string_view bytes = data_.substr(pos_, n);
    pos_ += n;
    return bytes;
  }
  // An unsigned little-endian integer of n bytes.
  absl::StatusOr<uint64_t> Unsigned(size_t n) {
    ASSIGN_OR_RETURN(absl::string_view bytes, Take(n));
    uint64_t value = 0;
    for (size_t i = 0; i < n; ++i) {
      value |= uint64_t(uint8_t(bytes[i])) << (8 * i);
    }
    return value;
  }
  absl::StatusOr<std::string> Line() {
    const size_t end = data_.find('\n', pos_);
    if (end == absl::string_view::npos) {
      return absl::InvalidArgumentError("pickle: truncated");
    }
    std::string line(data_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return line;
  }

  void Push(IValue value) { stack_.push_back({std::move(value), false}); }
  absl::StatusOr<Item> Pop() {
    if (stack_.empty() || (!marks_.empty() && stack_.size() <= marks_.back())) {
      return absl::InvalidArgumentError("pickle: stack underflow");
    }
    Item item = std::move(stack_.back());
    stack_.pop_back();
    return item;
  }
  // The items above the last mark, removed with it.
  absl::StatusOr<std::vector<IValue>> PopToMark() {
    if (marks_.empty()) return absl::InvalidArgumentError("pickle: no mark");
    std::vector<IValue> items;
    for (size_t i = marks_.back(); i < stack_.size(); ++i) {
      items.push_back(std::move(stack_[i].value));
    }
    stack_.resize(marks_.back());
    marks_.pop_back();
    return items;
  }
  absl::StatusOr<IValue*> Top() {
    if (stack_.empty())
      return absl::InvalidArgumentError("pickle: empty stack");
    return &stack_.back().value;
  }
  static absl::Status SetItems(IValue& dict, const std::vector<IValue>& items) {
    if (!dict.isGenericDict() || items.size() % 2 != 0) {
      return absl::InvalidArgumentError("pickle: SETITEMS on a non-dict");
    }
    auto map = dict.toGenericDict();
    for (size_t i = 0; i < items.size(); i += 2) {
      map.insert_or_assign(items[i], items[i + 1]);
    }
    return absl::OkStatus();
  }
  static absl::Status Append(IValue& list, std::vector<IValue> items) {
    if (!list.isList()) {
      return absl::InvalidArgumentError("pickle: APPEND on a non-list");
    }
    auto elements = list.toList();
    for (IValue& item : items) elements.push_back(std::move(item));
    return absl::OkStatus();
  }
  absl::Status Memo(uint64_t index) {
    if (stack_.empty())
      return absl::InvalidArgumentError("pickle: empty stack");
    memo_[index] = stack_.back();
    return absl::OkStatus();
  }
  absl::Status Get(uint64_t index) {
    auto it = memo_.find(index);
    if (it == memo_.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("pickle: memo ", index, " unset"));
    }
    stack_.push_back(it->second);
    return absl::OkStatus();
  }

  // A global called with `args`: OrderedDict() and torch's tensor rebuilders;
  // any other object reads as None.
  absl::StatusOr<IValue> Call(const std::string& global, const IValue& args) {
    const auto& elements = args.toTupleRef().elements();
    if (global == "collections.OrderedDict" && elements.empty()) {
      return IValue(
          c10::impl::GenericDict(c10::AnyType::get(), c10::AnyType::get()));
    }
    if (global == "torch._utils._rebuild_tensor_v2" ||
        global == "torch._utils._rebuild_tensor") {
      if (elements.size() < 4 || !elements[0].isTensor()) {
        return absl::InvalidArgumentError(
            absl::StrCat("pickle: bad arguments to ", global));
      }
      return IValue(elements[0].toTensor().as_strided(
          Ints(elements[2]), Ints(elements[3]), elements[1].toInt()));
    }
    // LibTorch's own pickler (torch::pickle_save) tags typed containers.
    if ((global == "torch._utils._rebuild_parameter" ||
         global.rfind("torch.jit._pickle.", 0) == 0) &&
        !elements.empty()) {
      return elements[0];
    }
    return IValue();
  }

  // torch.save's persistent id ('storage', type, key, location, numel).
  absl::StatusOr<IValue> Storage(const IValue& id) {
    if (storages_ == nullptr) {
      return absl::InvalidArgumentError("pickle: a tensor in a plain pickle");
    }
    const auto& e = id.toTupleRef().elements();
    if (e.size() < 5 || !e[0].isString() || e[0].toStringRef() != "storage") {
      return absl::InvalidArgumentError("pickle: unknown persistent id");
    }
    const std::string& key = e[2].toStringRef();
    auto it = storage_cache_.find(key);
    if (it == storage_cache_.end()) {
      ASSIGN_OR_RETURN(const c10::ScalarType type,
                       StorageType(e[1].toStringRef()));
      ASSIGN_OR_RETURN(torch::Tensor storage,
                       storages_(key, type, e[4].toInt()));
      it = storage_cache_.emplace(key, std::move(storage)).first;
    }
    return IValue(it->second);
  }

  absl::Status Step(char op) {
    switch (op) {
      case '\x80':  // PROTO
        return Take(1).status();
      case '\x95':  // FRAME
        return Take(8).status();
      case '.':  // STOP
        return absl::OkStatus();
      case '(':  // MARK
        marks_.push_back(stack_.size());
        return absl::OkStatus();
      case '0':  // POP
        return Pop().status();
      case '1':  // POP_MARK
        return PopToMark().status();
      case '2': {  // DUP
        RETURN_IF_ERROR(Top().status());
        stack_.push_back(stack_.back());
        return absl::OkStatus();
      }
      case 'N':
        Push(IValue());
        return absl::OkStatus();
      case '\x88':
      case '\x89':
        Push(IValue(op == '\x88'));
        return absl::OkStatus();
      case 'J': {  // BININT
        ASSIGN_OR_RETURN(uint64_t value, Unsigned(4));
        Push(IValue(int64_t(int32_t(uint32_t(value)))));
        return absl::OkStatus();
      }
      case 'K':
      case 'M': {  // BININT1, BININT2
        ASSIGN_OR_RETURN(uint64_t value, Unsigned(op == 'K' ? 1 : 2));
        Push(IValue(int64_t(value)));
        return absl::OkStatus();
      }
      case '\x8a': {  // LONG1: n bytes, little-endian two's complement.
        ASSIGN_OR_RETURN(uint64_t n, Unsigned(1));
        if (n > 8) return Error("integer wider than 64 bits", op);
        ASSIGN_OR_RETURN(uint64_t value, Unsigned(n));
        if (n > 0 && n < 8 && (value >> (8 * n - 1)) & 1) {
          value |= ~uint64_t(0) << (8 * n);
        }
        Push(IValue(int64_t(value)));
        return absl::OkStatus();
      }
      case 'G': {  // BINFLOAT: big-endian double.
        ASSIGN_OR_RETURN(absl::string_view bytes, Take(8));
        uint64_t bits = 0;
        for (char c : bytes) bits = bits << 8 | uint8_t(c);
        double value;
        std::memcpy(&value, &bits, 8);
        Push(IValue(value));
        return absl::OkStatus();
      }
      case 'X':       // BINUNICODE
      case 'B':       // BINBYTES
      case 'T':       // BINSTRING
      case '\x8c':    // SHORT_BINUNICODE
      case 'C':       // SHORT_BINBYTES
      case 'U':       // SHORT_BINSTRING
      case '\x8d':    // BINUNICODE8
      case '\x8e': {  // BINBYTES8
        const size_t width = (op == 'X' || op == 'B' || op == 'T') ? 4
                             : (op == '\x8d' || op == '\x8e')      ? 8
                                                                   : 1;
        ASSIGN_OR_RETURN(uint64_t n, Unsigned(width));
        ASSIGN_OR_RETURN(absl::string_view bytes, Take(n));
        Push(IValue(std::string(bytes)));
        return absl::OkStatus();
      }
      case ')':
        Push(IValue(c10::ivalue::Tuple::create(std::vector<IValue>())));
        return absl::OkStatus();
      case 't': {
        ASSIGN_OR_RETURN(std::vector<IValue> items, PopToMark());
        Push(IValue(c10::ivalue::Tuple::create(std::move(items))));
        return absl::OkStatus();
      }
      case '\x85':
      case '\x86':
      case '\x87': {  // TUPLE1, TUPLE2, TUPLE3
        std::vector<IValue> items(op - '\x84');
        for (size_t i = items.size(); i > 0; --i) {
          ASSIGN_OR_RETURN(Item item, Pop());
          items[i - 1] = std::move(item.value);
        }
        Push(IValue(c10::ivalue::Tuple::create(std::move(items))));
        return absl::OkStatus();
      }
      case ']':
      case 'l': {  // EMPTY_LIST, LIST
        std::vector<IValue> items;
        if (op == 'l') {
          ASSIGN_OR_RETURN(items, PopToMark());
        }
        IValue list(c10::impl::GenericList(c10::AnyType::get()));
        RETURN_IF_ERROR(Append(list, std::move(items)));
        Push(std::move(list));
        return absl::OkStatus();
      }
      case 'a': {  // APPEND
        ASSIGN_OR_RETURN(Item item, Pop());
        ASSIGN_OR_RETURN(IValue * list, Top());
        return Append(*list, {std::move(item.value)});
      }
      case 'e': {  // APPENDS
        ASSIGN_OR_RETURN(std::vector<IValue> items, PopToMark());
        ASSIGN_OR_RETURN(IValue * list, Top());
        return Append(*list, std::move(items));
      }
      case '}':
      case 'd': {  // EMPTY_DICT, DICT
        std::vector<IValue> items;
        if (op == 'd') {
          ASSIGN_OR_RETURN(items, PopToMark());
        }
        IValue dict(
            c10::impl::GenericDict(c10::AnyType::get(), c10::AnyType::get()));
        RETURN_IF_ERROR(SetItems(dict, items));
        Push(std::move(dict));
        return absl::OkStatus();
      }
      case 's': {  // SETITEM
        ASSIGN_OR_RETURN(Item value, Pop());
        ASSIGN_OR_RETURN(Item key, Pop());
        ASSIGN_OR_RETURN(IValue * dict, Top());
        return SetItems(*dict, {key.value, value.value});
      }
      case 'u': {  // SETITEMS
        ASSIGN_OR_RETURN(std::vector<IValue> items, PopToMark());
        ASSIGN_OR_RETURN(IValue * dict, Top());
        return SetItems(*dict, items);
      }
      case 'q':
      case 'r': {  // BINPUT, LONG_BINPUT
        ASSIGN_OR_RETURN(uint64_t index, Unsigned(op == 'q' ? 1 : 4));
        return Memo(index);
      }
      case '\x94':  // MEMOIZE
        return Memo(memo_.size());
      case 'h':
      case 'j': {  // BINGET, LONG_BINGET
        ASSIGN_OR_RETURN(uint64_t index, Unsigned(op == 'h' ? 1 : 4));
        return Get(index);
      }
      case 'c': {  // GLOBAL
        ASSIGN_OR_RETURN(std::string module, Line());
        ASSIGN_OR_RETURN(std::string name, Line());
        stack_.push_back({IValue(module + "." + name), true});
        return absl::OkStatus();
      }
      case '\x93': {  // STACK_GLOBAL
        ASSIGN_OR_RETURN(Item name, Pop());
        ASSIGN_OR_RETURN(Item module, Pop());
        if (!name.value.isString() || !module.value.isString()) {
          return Error("STACK_GLOBAL of non-strings", op);
        }
        stack_.push_back({IValue(module.value.toStringRef() + "." +
                                 name.value.toStringRef()),
                          true});
        return absl::OkStatus();
      }
      case 'R':       // REDUCE
      case '\x81': {  // NEWOBJ
        ASSIGN_OR_RETURN(Item args, Pop());
        ASSIGN_OR_RETURN(Item callable, Pop());
        if (!callable.callable || !args.value.isTuple()) {
          return Error("call of a non-global or without a tuple", op);
        }
        ASSIGN_OR_RETURN(IValue result,
                         Call(callable.value.toStringRef(), args.value));
        Push(std::move(result));
        return absl::OkStatus();
      }
      case 'b':  // BUILD: the object's state (attributes) is dropped.
        return Pop().status();
      case 'Q': {  // BINPERSID
        ASSIGN_OR_RETURN(Item id, Pop());
        if (!id.value.isTuple()) return Error("persistent id not a tuple", op);
        ASSIGN_OR_RETURN(IValue storage, Storage(id.value));
        Push(std::move(storage));
        return absl::OkStatus();
      }
      default:
        return Error("unsupported opcode", op);
    }
  }

  absl::string_view data_;
  StorageReader storages_;
  size_t pos_ = 0;
  std::vector<Item> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, Item> memo_;
  std::map<std::string, torch::Tensor> storage_cache_;
};

// Runs the unpickler; a LibTorch exception (a malformed value) becomes a
// Status too.
absl::StatusOr<IValue> Unpickle(const std::string& path, absl::string_view data,
                                StorageReader storages) {
  absl::StatusOr<IValue> value;
  try {
    value = Unpickler(data, std::move(storages)).Run();
  } catch (const c10::Error& e) {
    const std::string what = e.what_without_backtrace();
    value = absl::InvalidArgumentError(
        absl::StrCat("pickle: ", what.substr(0, what.find('\n'))));
  }
  if (!value.ok()) {
    return absl::Status(value.status().code(),
                        absl::StrCat(path, ": ", value.status().message()));
  }
  return value;
}

}  // namespace

absl::StatusOr<c10::IValue> ReadTorchSave(const std::string& path) {
  std::unique_ptr<caffe2::serialize::PyTorchStreamReader> zip;
  std::string pickle;
  try {
    zip = std::make_unique<caffe2::serialize::PyTorchStreamReader>(path);
    auto [data, size] = zip->getRecord("data.pkl");
    pickle.assign(static_cast<const char*>(data.get()), size);
  } catch (const c10::Error& e) {
    const std::string what = e.what_without_backtrace();
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a torch.save zip file (",
                     what.substr(0, what.find('\n')), ")"));
  }
  auto storages = [&zip](const std::string& key, c10::ScalarType dtype,
                         int64_t numel) -> absl::StatusOr<torch::Tensor> {
    torch::Tensor storage = torch::empty({numel}, dtype);
    const size_t bytes = numel * storage.element_size();
    if (bytes == 0) return storage;
    auto [data, size] = zip->getRecord("data/" + key);
    if (size != bytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          "storage data/", key, " has ", size, " bytes, expected ", bytes));
    }
    std::memcpy(storage.data_ptr(), data.get(), bytes);
    return storage;
  };
  return Unpickle(path, pickle, storages);
}

absl::StatusOr<c10::IValue> ReadPickle(const std::string& path) {
  ASSIGN_OR_RETURN(const std::string data, ReadFileToString(path));
  return Unpickle(path, data, nullptr);
}

}  // namespace sparse_layers::layers
