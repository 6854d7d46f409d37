// Factories by name, filled at static-initialisation time: the one mechanism
// behind the FFN and attention registries (a config names a layer family).
#ifndef SPARSE_LAYERS_OPS_CORE_NAME_REGISTRY_H_
#define SPARSE_LAYERS_OPS_CORE_NAME_REGISTRY_H_

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace sparse_layers::layers {

template <typename Factory>
class NameRegistry {
 public:
  static void Register(const std::string& name, Factory factory) {
    Factories()[name] = std::move(factory);
  }
  // The factory of `name`, or NotFound listing the registered names of this
  // `kind` ("ffn", "attention").
  static absl::StatusOr<const Factory*> Find(const std::string& kind,
                                             const std::string& name) {
    auto it = Factories().find(name);
    if (it == Factories().end()) {
      return absl::NotFoundError(
          absl::StrCat("unknown ", kind, " '", name,
                       "'; registered: ", absl::StrJoin(Names(), ", ")));
    }
    return &it->second;
  }
  static std::vector<std::string> Names() {
    std::vector<std::string> names;
    for (const auto& [name, factory] : Factories()) names.push_back(name);
    return names;
  }

 private:
  static std::map<std::string, Factory>& Factories() {
    static auto* factories = new std::map<std::string, Factory>;
    return *factories;
  }
};

}  // namespace sparse_layers::layers

#endif  // SPARSE_LAYERS_OPS_CORE_NAME_REGISTRY_H_
