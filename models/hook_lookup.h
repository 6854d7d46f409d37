// The checked form of GptImpl::FindHook for analyses: a hook name built from a
// user's block, site or fit that the model lacks is an error naming it, never
// a null pointer dereferenced later. Apart from gpt.h so the trainer, which
// looks up no hooks, does not link it.
#ifndef SPARSE_LAYERS_MODELS_HOOK_LOOKUP_H_
#define SPARSE_LAYERS_MODELS_HOOK_LOOKUP_H_

#include <string>

#include "absl/status/statusor.h"
#include "models/gpt.h"
#include "ops/hooks/hook_point.h"

namespace sparse_layers::layers {

// The hook point `name`, or NotFoundError "the model has no hook point
// <name>".
absl::StatusOr<HookPoint*> RequireHook(GptImpl& model, const std::string& name);

}  // namespace sparse_layers::layers

#endif  // SPARSE_LAYERS_MODELS_HOOK_LOOKUP_H_
