// export_activations: an activation cache split as safetensors files, one per
// shard, for Python users (name scheme in activation_export.h).
//
//   export_activations --activations=cache/test/test.activations.textproto
//       --out_dir=exported/
#include <cstdio>
#include <string>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "base/common/main.h"
#include "base/common/status_macros.h"
#include "ops/backend/torch_init.h"
#include "pipelines/activations/activation_export.h"

ABSL_FLAG(std::string, activations, "",
          "Activation manifest of one split (<split>.activations.textproto)");
ABSL_FLAG(std::string, out_dir, "", "Output directory");

namespace sparse_layers::datasets {
namespace {

absl::Status Run() {
  RETURN_IF_ERROR(FirstError(
      {RequiredFile(FLAGS_activations), RequiredFlag(FLAGS_out_dir)}));
  ASSIGN_OR_RETURN(const std::unique_ptr<ActivationSet> set,
                   ActivationSet::Open(absl::GetFlag(FLAGS_activations)));
  ASSIGN_OR_RETURN(const std::vector<std::string> written,
                   ExportActivationCache(*set, absl::GetFlag(FLAGS_out_dir)));
  std::fprintf(stderr, "export_activations: %lld rows in %zu files\n",
               static_cast<long long>(set->rows()), written.size());
  return absl::OkStatus();
}

}  // namespace
}  // namespace sparse_layers::datasets

int main(int argc, char** argv) {
  sparse_layers::InitMain(argc, argv,
                          "Exports an activation cache as safetensors.");
  return sparse_layers::RunMain(sparse_layers::datasets::Run);
}
