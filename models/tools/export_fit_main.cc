// export_fit: a fitted sparse layer (Transcoder, Skip Transcoder, TopK SAE,
// MxD, Lorsa) as a safetensors file for Python users (name scheme in
// fit_export.h), or an SAE as a SAELens SAE directory (saelens_export.h).
//
//   export_fit --checkpoint=gelu_mxd_k8_s1.pt --out=gelu_mxd_k8_s1.safetensors
//   export_fit --format=saelens --checkpoint=sae_k8_s1.pt --out=sae_k8_s1/
#include <cstdio>
#include <string>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/common/main.h"
#include "base/common/output_paths.h"
#include "base/common/status_macros.h"
#include "models/checkpoints/fit_export.h"
#include "models/checkpoints/saelens_export.h"
#include "ops/backend/torch_init.h"

ABSL_FLAG(std::string, checkpoint, "", "Fitted replacement checkpoint (.pt)");
ABSL_FLAG(std::string, out, "",
          "Output .safetensors file, or directory with --format=saelens");
ABSL_FLAG(std::string, format, "safetensors",
          "safetensors (sparse_layers.fit.v1, every fit) or saelens (a "
          "SAELens SAE directory: TopK, ReLU, JumpReLU and BatchTopK SAEs)");

namespace sparse_layers::layers {
namespace {

absl::Status Run() {
  RETURN_IF_ERROR(
      FirstError({RequiredFile(FLAGS_checkpoint), RequiredFlag(FLAGS_out),
                  OutputIsNotAnInput("--out", absl::GetFlag(FLAGS_out),
                                     {absl::GetFlag(FLAGS_checkpoint)})}));
  const std::string checkpoint = absl::GetFlag(FLAGS_checkpoint);
  const std::string format = absl::GetFlag(FLAGS_format);
  if (format == "saelens") {
    ASSIGN_OR_RETURN(const SaeLensExport described,
                     ExportSaeLens(checkpoint, absl::GetFlag(FLAGS_out)));
    std::fprintf(stderr, "export_fit: %s as a SAELens %s SAE (%zu tensors)\n",
                 checkpoint.c_str(), described.architecture.c_str(),
                 described.tensors.size());
    return absl::OkStatus();
  }
  if (format != "safetensors") {
    return absl::InvalidArgumentError(
        absl::StrCat("--format=", format, ": expected safetensors or saelens"));
  }
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
