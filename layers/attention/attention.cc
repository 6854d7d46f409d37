#include "layers/attention/attention.h"

#include "absl/strings/str_cat.h"
#include "base/common/status_macros.h"
#include "ops/core/name_registry.h"

namespace sparse_layers::layers {

using Factories = NameRegistry<AttentionFactory>;

void AttentionRegistry::Register(const std::string& name,
                                 AttentionFactory factory) {
  Factories::Register(name, std::move(factory));
}

absl::StatusOr<std::shared_ptr<AttentionImpl>> AttentionRegistry::Create(
    const std::string& name, const AttentionOptions& options) {
  ASSIGN_OR_RETURN(const AttentionFactory* factory,
                   Factories::Find("attention", name));
  if (options.d_model <= 0 || options.n_heads <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "attention '", name, "' needs d_model > 0 and n_heads > 0"));
  }
  return (*factory)(options);
}

std::vector<std::string> AttentionRegistry::Names() {
  return Factories::Names();
}

}  // namespace sparse_layers::layers
