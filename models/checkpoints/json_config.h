// A JSON config file read as typed fields with one-line errors naming the
// file and the field: Hugging Face's config.json (hf_checkpoint) and SAELens's
// cfg.json (saelens_import).
#ifndef SPARSE_LAYERS_MODELS_CHECKPOINTS_JSON_CONFIG_H_
#define SPARSE_LAYERS_MODELS_CHECKPOINTS_JSON_CONFIG_H_

#include <cstdint>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "base/common/json_object.h"
#include "google/protobuf/struct.pb.h"

namespace sparse_layers::layers {

// A JSON file's top-level object (base/common/json_object.h).
using ::sparse_layers::ReadJsonObject;

// The fields of a JSON config (or of one object inside it, `prefix` naming
// it), read with one-line errors "<path>: field 'n_embd' ...". A JSON null
// reads as absent, as transformers' configs write unset optional fields.
class ConfigFields {
 public:
  // `root` must outlive this object.
  ConfigFields(std::string path, const google::protobuf::Struct& root,
               std::string prefix = "")
      : path_(std::move(path)), root_(root), prefix_(std::move(prefix)) {}

  bool Has(const std::string& name) const { return Find(name) != nullptr; }
  absl::Status Error(const std::string& name, absl::string_view what) const;
  absl::StatusOr<const google::protobuf::Value*> Required(
      const std::string& name) const;

  absl::StatusOr<int64_t> PositiveInt(const std::string& name) const;
  absl::StatusOr<int64_t> PositiveInt(const std::string& name,
                                      int64_t fallback) const;
  absl::StatusOr<double> PositiveNumber(const std::string& name) const;
  absl::StatusOr<double> PositiveNumber(const std::string& name,
                                        double fallback) const;
  absl::StatusOr<bool> Bool(const std::string& name, bool fallback) const;
  absl::StatusOr<std::string> String(const std::string& name) const;
  absl::StatusOr<std::string> String(const std::string& name,
                                     const std::string& fallback) const;
  // An object field as fields of its own.
  absl::StatusOr<ConfigFields> Object(const std::string& name) const;
  // A field that must hold `expected` when present (a variant the reader
  // does not implement).
  absl::Status RequireBool(const std::string& name, bool fallback,
                           bool expected) const;

 private:
  const google::protobuf::Value* Find(const std::string& name) const;

  std::string path_;
  const google::protobuf::Struct& root_;
  std::string prefix_;
};

}  // namespace sparse_layers::layers

#endif  // SPARSE_LAYERS_MODELS_CHECKPOINTS_JSON_CONFIG_H_
