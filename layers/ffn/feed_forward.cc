#include "layers/ffn/feed_forward.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace sparse_layers::layers {
namespace {

std::map<std::string, FeedForwardFactory>& Factories() {
  static auto* factories = new std::map<std::string, FeedForwardFactory>;
  return *factories;
}

}  // namespace

void FeedForwardRegistry::Register(const std::string& name,
                                   FeedForwardFactory factory) {
  Factories()[name] = std::move(factory);
}

absl::StatusOr<std::shared_ptr<FeedForwardImpl>> FeedForwardRegistry::Create(
    const std::string& name, const FeedForwardOptions& options) {
  auto it = Factories().find(name);
  if (it == Factories().end()) {
    return absl::NotFoundError(
        absl::StrCat("unknown ffn '", name,
                     "'; registered: ", absl::StrJoin(Names(), ", ")));
  }
  if (options.d_model <= 0 || options.d_hidden <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("ffn '", name, "' needs d_model > 0 and d_ffn > 0"));
  }
  return it->second(options);
}

std::vector<std::string> FeedForwardRegistry::Names() {
  std::vector<std::string> names;
  for (const auto& [name, factory] : Factories()) names.push_back(name);
  return names;
}

}  // namespace sparse_layers::layers
