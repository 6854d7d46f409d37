#include "models/checkpoints/safetensors.h"

#include <algorithm>
#include <cstring>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "base/common/file_io.h"
#include "base/common/json_object.h"
#include "base/common/mapped_file.h"
#include "base/common/status_macros.h"
#include "google/protobuf/struct.pb.h"

namespace sparse_layers::layers {
namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "safetensors data is little-endian and is copied as is");

using google::protobuf::Struct;
using google::protobuf::Value;

constexpr uint64_t kLengthBytes = 8;
// The official reader's MAX_HEADER_SIZE.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;
// JSON numbers arrive as doubles; integers above 2^53 would not be exact.
constexpr double kMaxExactInteger = 9007199254740992.0;
constexpr char kMetadataKey[] = "__metadata__";

// The dtypes of the official Dtype enum and their sizes in bits.
int DtypeBits(absl::string_view dtype) {
  static const auto* const kBits = new std::map<std::string, int, std::less<>>{
      {"BOOL", 8},    {"F4", 4},          {"F6_E2M3", 6},     {"F6_E3M2", 6},
      {"U8", 8},      {"I8", 8},          {"F8_E5M2", 8},     {"F8_E4M3", 8},
      {"F8_E8M0", 8}, {"F8_E4M3FNUZ", 8}, {"F8_E5M2FNUZ", 8}, {"I16", 16},
      {"U16", 16},    {"F16", 16},        {"BF16", 16},       {"I32", 32},
      {"U32", 32},    {"F32", 32},        {"C64", 64},        {"F64", 64},
      {"I64", 64},    {"U64", 64}};
  auto it = kBits->find(dtype);
  return it == kBits->end() ? 0 : it->second;
}

std::string ShapeText(const std::vector<int64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

// The first line of a parser message (protobuf's may carry a second line
// pointing at the column).
// A JSON number that is a non-negative integer exactly representable.
absl::StatusOr<uint64_t> NonNegativeInteger(const Value& value) {
  if (value.kind_case() != Value::kNumberValue) {
    return absl::InvalidArgumentError("not a number");
  }
  const double number = value.number_value();
  if (!(number >= 0) || number > kMaxExactInteger ||
      number != static_cast<double>(static_cast<uint64_t>(number))) {
    return absl::InvalidArgumentError(
        absl::StrCat(number, " is not a non-negative integer"));
  }
  return static_cast<uint64_t>(number);
}

// Checks one tensor's header entry: its fields, its dtype, and that its byte
// range holds exactly numel * dtype size bytes inside the data buffer.
absl::StatusOr<SafetensorsEntry> ParseEntry(const std::string& name,
                                            const Value& value,
                                            uint64_t buffer_bytes) {
  auto bad = [&](absl::string_view what) {
    return absl::DataLossError(absl::StrCat("tensor '", name, "' ", what));
  };
  if (value.kind_case() != Value::kStructValue) {
    return bad("is not an object with dtype, shape and data_offsets");
  }
  const auto& fields = value.struct_value().fields();
  auto dtype = fields.find("dtype");
  auto shape = fields.find("shape");
  auto offsets = fields.find("data_offsets");
  if (dtype == fields.end() || shape == fields.end() ||
      offsets == fields.end()) {
    return bad("lacks one of dtype, shape and data_offsets");
  }
  SafetensorsEntry entry;
  if (dtype->second.kind_case() != Value::kStringValue) {
    return bad("has a dtype that is not a string");
  }
  entry.dtype = dtype->second.string_value();
  const int bits = DtypeBits(entry.dtype);
  if (bits == 0)
    return bad(absl::StrCat("has unknown dtype '", entry.dtype, "'"));

  if (shape->second.kind_case() != Value::kListValue) {
    return bad("has a shape that is not a list");
  }
  uint64_t numel = 1;
  for (const Value& dim : shape->second.list_value().values()) {
    absl::StatusOr<uint64_t> size = NonNegativeInteger(dim);
    if (!size.ok()) {
      return bad(
          absl::StrCat("has a bad shape dimension: ", size.status().message()));
    }
    if (__builtin_mul_overflow(numel, *size, &numel)) {
      return bad("has a shape whose element count overflows");
    }
    entry.shape.push_back(static_cast<int64_t>(*size));
  }
  uint64_t bits_total;
  if (__builtin_mul_overflow(numel, static_cast<uint64_t>(bits), &bits_total)) {
    return bad("has a shape whose byte count overflows");
  }
  if (bits_total % 8 != 0) {
    return bad(absl::StrCat("has ", numel, " elements of ", entry.dtype,
                            ", not a whole number of bytes"));
  }

  if (offsets->second.kind_case() != Value::kListValue ||
      offsets->second.list_value().values_size() != 2) {
    return bad("has data_offsets that are not a list [begin, end]");
  }
  const auto& pair = offsets->second.list_value().values();
  absl::StatusOr<uint64_t> begin = NonNegativeInteger(pair[0]);
  absl::StatusOr<uint64_t> end = NonNegativeInteger(pair[1]);
  if (!begin.ok() || !end.ok()) {
    return bad("has data_offsets that are not non-negative integers");
  }
  entry.begin = *begin;
  entry.end = *end;
  if (entry.end < entry.begin) {
    return bad(absl::StrCat("has data_offsets [", entry.begin, ", ", entry.end,
                            "] that end before they begin"));
  }
  if (entry.end > buffer_bytes) {
    return bad(absl::StrCat("has data_offsets [", entry.begin, ", ", entry.end,
                            "] past the end of the ", buffer_bytes,
                            "-byte data buffer (file truncated?)"));
  }
  if (entry.end - entry.begin != bits_total / 8) {
    return bad(absl::StrCat("has ", entry.end - entry.begin,
                            " bytes of data, but shape ",
                            ShapeText(entry.shape), " of ", entry.dtype,
                            " needs ", bits_total / 8));
  }
  return entry;
}

struct PreparedWrite {
  std::string head;                 // The 8-byte length and the padded header.
  std::vector<torch::Tensor> data;  // Contiguous CPU float32, in file order.
};

absl::StatusOr<PreparedWrite> Prepare(
    const std::map<std::string, torch::Tensor>& tensors,
    const std::map<std::string, std::string>& metadata) {
  PreparedWrite prepared;
  std::string json = "{";
  if (!metadata.empty()) {
    AppendJsonString(kMetadataKey, &json);
    json.append(":{");
    bool first = true;
    for (const auto& [key, value] : metadata) {
      if (!first) json.push_back(',');
      first = false;
      AppendJsonString(key, &json);
      json.push_back(':');
      AppendJsonString(value, &json);
    }
    json.push_back('}');
  }
  uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    if (name.empty() || name == kMetadataKey) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", name, "' is not a tensor name"));
    }
    if (!tensor.defined() || tensor.scalar_type() != torch::kFloat) {
      return absl::InvalidArgumentError(absl::StrCat(
          "tensor '", name, "' is ",
          tensor.defined() ? c10::toString(tensor.scalar_type()) : "undefined",
          "; only float32 is written"));
    }
    torch::Tensor data = tensor.detach().to(torch::kCPU).contiguous();
    const uint64_t bytes = static_cast<uint64_t>(data.numel()) * sizeof(float);
    if (json.size() > 1) json.push_back(',');
    AppendJsonString(name, &json);
    absl::StrAppend(&json, ":{\"dtype\":\"F32\",\"shape\":[",
                    absl::StrJoin(data.sizes(), ","), "],\"data_offsets\":[",
                    offset, ",", offset + bytes, "]}");
    offset += bytes;
    prepared.data.push_back(std::move(data));
  }
  json.push_back('}');
  json.resize((json.size() + 7) / 8 * 8, ' ');
  uint64_t length = json.size();
  prepared.head.assign(reinterpret_cast<const char*>(&length), kLengthBytes);
  prepared.head.append(json);
  return prepared;
}

absl::string_view Bytes(const torch::Tensor& data) {
  return absl::string_view(static_cast<const char*>(data.data_ptr()),
                           data.numel() * sizeof(float));
}

}  // namespace

// serde_json's escaping (the official writer's): \" \\ \b \f \n \r \t, other
// control characters as \u00xx, everything else (UTF-8 included) as is.
void AppendJsonString(absl::string_view text, std::string* out) {
  static constexpr std::pair<char, char> kShortEscapes[] = {
      {'"', '"'},  {'\\', '\\'}, {'\b', 'b'}, {'\f', 'f'},
      {'\n', 'n'}, {'\r', 'r'},  {'\t', 't'}};
  constexpr char kHex[] = "0123456789abcdef";
  out->push_back('"');
  for (const char c : text) {
    const auto* escape =
        std::find_if(std::begin(kShortEscapes), std::end(kShortEscapes),
                     [c](const auto& pair) { return pair.first == c; });
    if (escape != std::end(kShortEscapes)) {
      out->push_back('\\');
      out->push_back(escape->second);
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out->append("\\u00");
      out->push_back(kHex[(c >> 4) & 0xF]);
      out->push_back(kHex[c & 0xF]);
    } else {
      out->push_back(c);
    }
  }
  out->push_back('"');
}

absl::StatusOr<std::unique_ptr<SafetensorsFile>> SafetensorsFile::Open(
    const std::string& path) {
  auto error = [&](absl::string_view what) {
    return absl::DataLossError(absl::StrCat(path, ": ", what));
  };
  ASSIGN_OR_RETURN(MappedFile mapping, MappedFile::Open(path));
  const uint64_t size = mapping.size();
  if (size < kLengthBytes) {
    return error(absl::StrCat("truncated: ", size,
                              " bytes, fewer than the 8-byte header length"));
  }
  uint64_t header_size;
  std::memcpy(&header_size, mapping.data(), kLengthBytes);
  std::unique_ptr<SafetensorsFile> file(
      new SafetensorsFile(path, std::move(mapping), 0));
  if (header_size > kMaxHeaderBytes) {
    return error(absl::StrCat("header length ", header_size,
                              " exceeds the format's limit of ",
                              kMaxHeaderBytes, " bytes (not safetensors?)"));
  }
  if (header_size > size - kLengthBytes) {
    return error(absl::StrCat("truncated: header says ", header_size,
                              " bytes, file has ", size - kLengthBytes,
                              " after the 8-byte length"));
  }
  file->data_start_ = kLengthBytes + header_size;
  RETURN_IF_ERROR(file->ParseHeader(header_size));
  return file;
}

absl::Status SafetensorsFile::ParseHeader(uint64_t header_size) {
  auto error = [&](absl::string_view what) {
    return absl::DataLossError(absl::StrCat(path_, ": ", what));
  };
  const absl::string_view header(
      reinterpret_cast<const char*>(mapping_.data()) + kLengthBytes,
      header_size);
  if (header.empty() || header.front() != '{') {
    return error("header does not begin with '{' (not safetensors?)");
  }
  absl::StatusOr<Struct> parsed = ParseJsonObject(header);
  if (!parsed.ok()) {
    return error(
        absl::StrCat("header is not valid JSON: ", parsed.status().message()));
  }
  const Struct& root = *parsed;
  const uint64_t buffer_bytes = mapping_.size() - data_start_;
  for (const auto& [name, value] : root.fields()) {
    if (name == kMetadataKey) {
      if (value.kind_case() != Value::kStructValue) {
        return error("__metadata__ is not an object");
      }
      for (const auto& [key, item] : value.struct_value().fields()) {
        if (item.kind_case() != Value::kStringValue) {
          return error(
              absl::StrCat("__metadata__ value '", key, "' is not a string"));
        }
        metadata_[key] = item.string_value();
      }
      continue;
    }
    absl::StatusOr<SafetensorsEntry> entry =
        ParseEntry(name, value, buffer_bytes);
    if (!entry.ok()) return error(entry.status().message());
    entries_[name] = *std::move(entry);
  }

  // In offset order the tensors must tile [0, buffer_bytes) exactly.
  std::vector<const std::pair<const std::string, SafetensorsEntry>*> order;
  for (const auto& item : entries_) order.push_back(&item);
  std::sort(order.begin(), order.end(), [](const auto* a, const auto* b) {
    return std::tie(a->second.begin, a->second.end) <
           std::tie(b->second.begin, b->second.end);
  });
  uint64_t covered = 0;
  for (const auto* item : order) {
    if (item->second.begin != covered) {
      return error(absl::StrCat(
          "tensor '", item->first, "' data starts at byte ", item->second.begin,
          " of the data buffer, expected ", covered,
          " (tensors must tile the buffer without gaps or overlaps)"));
    }
    covered = item->second.end;
  }
  if (covered != buffer_bytes) {
    return error(absl::StrCat("data buffer has ", buffer_bytes,
                              " bytes but its tensors cover ", covered,
                              " (the format allows no trailing bytes)"));
  }
  return absl::OkStatus();
}

SafetensorsFile::~SafetensorsFile() = default;

std::vector<std::string> SafetensorsFile::Names() const {
  std::vector<std::string> names;
  names.reserve(entries_.size());
  for (const auto& item : entries_) names.push_back(item.first);
  return names;
}

bool SafetensorsFile::Contains(const std::string& name) const {
  return entries_.count(name) > 0;
}

absl::StatusOr<SafetensorsEntry> SafetensorsFile::Entry(
    const std::string& name) const {
  auto it = entries_.find(name);
  if (it == entries_.end()) {
    return absl::NotFoundError(
        absl::StrCat(path_, ": tensor '", name, "' missing"));
  }
  return it->second;
}

absl::Status SafetensorsFile::CheckShape(
    const std::string& name, const std::vector<int64_t>& expected) const {
  ASSIGN_OR_RETURN(const SafetensorsEntry entry, Entry(name));
  if (entry.shape != expected) {
    return absl::InvalidArgumentError(absl::StrCat(
        path_, ": tensor '", name, "' has shape ", ShapeText(entry.shape),
        ", expected ", ShapeText(expected)));
  }
  return absl::OkStatus();
}

absl::StatusOr<torch::Tensor> SafetensorsFile::ReadFloat(
    const std::string& name) const {
  ASSIGN_OR_RETURN(const SafetensorsEntry entry, Entry(name));
  torch::ScalarType stored;
  if (entry.dtype == "F32") {
    stored = torch::kFloat;
  } else if (entry.dtype == "F16") {
    stored = torch::kHalf;
  } else if (entry.dtype == "BF16") {
    stored = torch::kBFloat16;
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        path_, ": unsupported dtype '", entry.dtype, "' for tensor '", name,
        "' (F32, F16 and BF16 read as float32)"));
  }
  // Copied rather than wrapped: the data need not be aligned for its dtype
  // (only the official writer's padding makes it so), and the tensor must
  // outlive the mapping.
  torch::Tensor raw = torch::empty(entry.shape, torch::dtype(stored));
  if (entry.end > entry.begin) {
    std::memcpy(raw.data_ptr(), mapping_.data() + data_start_ + entry.begin,
                entry.end - entry.begin);
  }
  return stored == torch::kFloat ? raw : raw.to(torch::kFloat);
}

absl::StatusOr<torch::Tensor> SafetensorsFile::ReadFloat(
    const std::string& name, const std::vector<int64_t>& expected) const {
  RETURN_IF_ERROR(CheckShape(name, expected));
  return ReadFloat(name);
}

absl::StatusOr<std::string> SerializeSafetensors(
    const std::map<std::string, torch::Tensor>& tensors,
    const std::map<std::string, std::string>& metadata) {
  ASSIGN_OR_RETURN(PreparedWrite prepared, Prepare(tensors, metadata));
  std::string out = std::move(prepared.head);
  for (const torch::Tensor& data : prepared.data) {
    const absl::string_view bytes = Bytes(data);
    out.append(bytes.data(), bytes.size());
  }
  return out;
}

absl::Status WriteSafetensors(
    const std::string& path,
    const std::map<std::string, torch::Tensor>& tensors,
    const std::map<std::string, std::string>& metadata) {
  absl::StatusOr<PreparedWrite> prepared = Prepare(tensors, metadata);
  if (!prepared.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": ", prepared.status().message()));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<AtomicFileWriter> writer,
                   AtomicFileWriter::Open(path));
  RETURN_IF_ERROR(writer->Append(prepared->head));
  for (const torch::Tensor& data : prepared->data) {
    RETURN_IF_ERROR(writer->Append(Bytes(data)));
  }
  return writer->Commit();
}

}  // namespace sparse_layers::layers
