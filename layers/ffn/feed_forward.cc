#include "layers/ffn/feed_forward.h"

#include "absl/strings/str_cat.h"
#include "base/common/status_macros.h"
#include "ops/core/name_registry.h"

namespace sparse_layers::layers {

using Factories = NameRegistry<FeedForwardFactory>;

void FeedForwardRegistry::Register(const std::string& name,
                                   FeedForwardFactory factory) {
  Factories::Register(name, std::move(factory));
}

absl::StatusOr<std::shared_ptr<FeedForwardImpl>> FeedForwardRegistry::Create(
    const std::string& name, const FeedForwardOptions& options) {
  ASSIGN_OR_RETURN(const FeedForwardFactory* factory,
                   Factories::Find("ffn", name));
  if (options.d_model <= 0 || options.d_ffn <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("ffn '", name, "' needs d_model > 0 and d_ffn > 0"));
  }
  return (*factory)(options);
}

std::vector<std::string> FeedForwardRegistry::Names() {
  return Factories::Names();
}

}  // namespace sparse_layers::layers
