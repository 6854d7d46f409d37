#include "base/common/json_object.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/common/file_io.h"
#include "base/common/status_macros.h"
#include "google/protobuf/util/json_util.h"

namespace sparse_layers {

absl::StatusOr<google::protobuf::Struct> ParseJsonObject(
    absl::string_view json) {
  google::protobuf::Struct object;
  const auto status = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(json.data(), json.size()), &object);
  if (!status.ok()) {
    const std::string message = status.message().as_string();
    return absl::InvalidArgumentError(message.substr(0, message.find('\n')));
  }
  return object;
}

absl::StatusOr<google::protobuf::Struct> ReadJsonObject(
    const std::string& path) {
  ASSIGN_OR_RETURN(const std::string text, ReadFileToString(path));
  absl::StatusOr<google::protobuf::Struct> object = ParseJsonObject(text);
  if (!object.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not valid JSON: ", object.status().message()));
  }
  return object;
}

}  // namespace sparse_layers
