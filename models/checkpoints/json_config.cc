#include "models/checkpoints/json_config.h"

#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/common/status_macros.h"

namespace sparse_layers::layers {
namespace {

using google::protobuf::Struct;
using google::protobuf::Value;

// JSON numbers arrive as doubles; integers above 2^53 would not be exact.
constexpr double kMaxExactInteger = 9007199254740992.0;

std::string ValueText(const Value& value) {
  switch (value.kind_case()) {
    case Value::kNumberValue:
      return absl::StrCat(value.number_value());
    case Value::kStringValue:
      return absl::StrCat("\"", value.string_value(), "\"");
    case Value::kBoolValue:
      return value.bool_value() ? "true" : "false";
    case Value::kStructValue:
      return "an object";
    case Value::kListValue:
      return "a list";
    default:
      return "null";
  }
}

}  // namespace

absl::Status ConfigFields::Error(const std::string& name,
                                 absl::string_view what) const {
  return absl::InvalidArgumentError(
      absl::StrCat(path_, ": field '", prefix_, name, "' ", what));
}

absl::StatusOr<const Value*> ConfigFields::Required(
    const std::string& name) const {
  const Value* value = Find(name);
  if (value == nullptr) return Error(name, "missing");
  return value;
}

absl::StatusOr<int64_t> ConfigFields::PositiveInt(
    const std::string& name) const {
  ASSIGN_OR_RETURN(const Value* value, Required(name));
  const double number = value->number_value();
  if (value->kind_case() != Value::kNumberValue || !(number >= 1) ||
      number > kMaxExactInteger || number != std::floor(number)) {
    return Error(name, absl::StrCat("must be a positive integer, got ",
                                    ValueText(*value)));
  }
  return static_cast<int64_t>(number);
}

absl::StatusOr<int64_t> ConfigFields::PositiveInt(const std::string& name,
                                                  int64_t fallback) const {
  return Has(name) ? PositiveInt(name) : fallback;
}

absl::StatusOr<double> ConfigFields::PositiveNumber(
    const std::string& name) const {
  ASSIGN_OR_RETURN(const Value* value, Required(name));
  if (value->kind_case() != Value::kNumberValue ||
      !(value->number_value() > 0) || std::isinf(value->number_value())) {
    return Error(name, absl::StrCat("must be a positive number, got ",
                                    ValueText(*value)));
  }
  return value->number_value();
}

absl::StatusOr<double> ConfigFields::PositiveNumber(const std::string& name,
                                                    double fallback) const {
  return Has(name) ? PositiveNumber(name) : fallback;
}

absl::StatusOr<bool> ConfigFields::Bool(const std::string& name,
                                        bool fallback) const {
  const Value* value = Find(name);
  if (value == nullptr) return fallback;
  if (value->kind_case() != Value::kBoolValue) {
    return Error(
        name, absl::StrCat("must be true or false, got ", ValueText(*value)));
  }
  return value->bool_value();
}

absl::StatusOr<std::string> ConfigFields::String(
    const std::string& name) const {
  ASSIGN_OR_RETURN(const Value* value, Required(name));
  if (value->kind_case() != Value::kStringValue) {
    return Error(name,
                 absl::StrCat("must be a string, got ", ValueText(*value)));
  }
  return value->string_value();
}

absl::StatusOr<std::string> ConfigFields::String(
    const std::string& name, const std::string& fallback) const {
  return Has(name) ? String(name) : fallback;
}

absl::StatusOr<ConfigFields> ConfigFields::Object(
    const std::string& name) const {
  ASSIGN_OR_RETURN(const Value* value, Required(name));
  if (value->kind_case() != Value::kStructValue) {
    return Error(name,
                 absl::StrCat("must be an object, got ", ValueText(*value)));
  }
  return ConfigFields(path_, value->struct_value(),
                      absl::StrCat(prefix_, name, "."));
}

absl::Status ConfigFields::RequireBool(const std::string& name, bool fallback,
                                       bool expected) const {
  ASSIGN_OR_RETURN(const bool value, Bool(name, fallback));
  if (value != expected) {
    return Error(name,
                 absl::StrCat("is ", value ? "true" : "false", "; only ",
                              expected ? "true" : "false", " is supported"));
  }
  return absl::OkStatus();
}

const Value* ConfigFields::Find(const std::string& name) const {
  auto it = root_.fields().find(name);
  if (it == root_.fields().end() ||
      it->second.kind_case() == Value::kNullValue) {
    return nullptr;
  }
  return &it->second;
}

}  // namespace sparse_layers::layers
