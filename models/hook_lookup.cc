#include "models/hook_lookup.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace sparse_layers::layers {

absl::StatusOr<HookPoint*> RequireHook(GptImpl& model,
                                       const std::string& name) {
  HookPoint* hook = model.FindHook(name);
  if (hook == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("the model has no hook point ", name));
  }
  return hook;
}

}  // namespace sparse_layers::layers
