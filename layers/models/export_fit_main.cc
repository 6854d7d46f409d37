// export_fit: a fitted sparse layer (Transcoder, Skip Transcoder, TopK SAE,
// MxD, Lorsa) as a safetensors file for Python users (name scheme in
// fit_export.h).
//
//   export_fit --checkpoint=gelu_mxd_k8_s1.pt --out=gelu_mxd_k8_s1.safetensors
#include <cstdio>
#include <string>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "layers/backend/torch_init.h"
#include "layers/models/fit_export.h"
#include "tools/common/main.h"
#include "tools/common/status_macros.h"

ABSL_FLAG(std::string, checkpoint, "", "Fitted replacement checkpoint (.pt)");
ABSL_FLAG(std::string, out, "", "Output .safetensors file");

namespace sparse_layers::layers {
namespace {

absl::Status Run() {
  RETURN_IF_ERROR(
      FirstError({RequiredFile(FLAGS_checkpoint), RequiredFlag(FLAGS_out)}));
  const std::string checkpoint = absl::GetFlag(FLAGS_checkpoint);
  ASSIGN_OR_RETURN(const FitExport described,
                   ExportFit(checkpoint, absl::GetFlag(FLAGS_out)));
  std::fprintf(stderr, "export_fit: %s (%s) as %zu tensors\n",
               checkpoint.c_str(), described.metadata.at("layer_type").c_str(),
               described.tensors.size());
  return absl::OkStatus();
}

}  // namespace
}  // namespace sparse_layers::layers

int main(int argc, char** argv) {
  sparse_layers::InitMain(argc, argv, "Exports a fitted layer as safetensors.");
  return sparse_layers::RunMain(sparse_layers::layers::Run);
}
