// One JSON parse for the project's readers (Hugging Face and SAELens configs,
// safetensors headers, tokenizer files, corpus records): the text as a
// protobuf Struct, errors cut to the parser's first line (the rest repeats the
// input).
#ifndef SPARSE_LAYERS_BASE_COMMON_JSON_OBJECT_H_
#define SPARSE_LAYERS_BASE_COMMON_JSON_OBJECT_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/struct.pb.h"

namespace sparse_layers {

// The top-level object of `json`; InvalidArgumentError with the parser's
// first line otherwise (the caller says what the text was).
absl::StatusOr<google::protobuf::Struct> ParseJsonObject(
    absl::string_view json);

// The top-level object of the file at `path`; errors name it:
// "<path>: not valid JSON: <parser's first line>".
absl::StatusOr<google::protobuf::Struct> ReadJsonObject(
    const std::string& path);

}  // namespace sparse_layers

#endif  // SPARSE_LAYERS_BASE_COMMON_JSON_OBJECT_H_
