// One text-format parse for the project's manifests, claims files and
// summaries: protobuf's parser prints its errors to stderr, so a bad file gave
// an "ERROR" line beside (or instead of) the tool's one-line error.
#ifndef SPARSE_LAYERS_BASE_COMMON_TEXT_PROTO_H_
#define SPARSE_LAYERS_BASE_COMMON_TEXT_PROTO_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"

namespace sparse_layers {

// Parses `text` into `message`, printing nothing; InvalidArgumentError
// "<source>:<line>:<column>: <parser's first error>" on failure.
absl::Status ParseTextProto(absl::string_view text, absl::string_view source,
                            google::protobuf::Message* message);

}  // namespace sparse_layers

#endif  // SPARSE_LAYERS_BASE_COMMON_TEXT_PROTO_H_
