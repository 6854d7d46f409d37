// import_saelens: a SAELens SAE directory (a TopK SAE, as SAELens 6.x's
// SAE.load_from_disk reads it) on one of our base models, saved as a fit
// checkpoint that every fit-reading tool takes (saelens_import.h).
//
//   import_saelens --sae_dir=gpt2_res_sae/ --base=gpt2.pt --out=gpt2_sae.pt
#include <cstdio>
#include <string>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "base/common/main.h"
#include "base/common/output_paths.h"
#include "base/common/status_macros.h"
#include "models/checkpoints/saelens_import.h"
#include "ops/backend/torch_init.h"

ABSL_FLAG(std::string, sae_dir, "",
          "SAELens SAE directory (cfg.json, sae_weights.safetensors)");
ABSL_FLAG(std::string, base, "", "Base model checkpoint (.pt) the SAE reads");
ABSL_FLAG(std::string, out, "", "Output fit checkpoint (.pt)");

namespace sparse_layers::layers {
namespace {

absl::Status Run() {
  RETURN_IF_ERROR(
      FirstError({RequiredFlag(FLAGS_sae_dir), RequiredFile(FLAGS_base),
                  RequiredFlag(FLAGS_out),
                  OutputIsNotAnInput("--out", absl::GetFlag(FLAGS_out),
                                     {absl::GetFlag(FLAGS_base)})}));
  RETURN_IF_ERROR(ImportSaeLens(absl::GetFlag(FLAGS_sae_dir),
                                absl::GetFlag(FLAGS_base),
                                absl::GetFlag(FLAGS_out)));
  std::fprintf(stderr, "import_saelens: %s on %s as %s\n",
               absl::GetFlag(FLAGS_sae_dir).c_str(),
               absl::GetFlag(FLAGS_base).c_str(),
               absl::GetFlag(FLAGS_out).c_str());
  return absl::OkStatus();
}

}  // namespace
}  // namespace sparse_layers::layers

int main(int argc, char** argv) {
  sparse_layers::InitMain(argc, argv,
                          "Imports a SAELens TopK SAE as a fit checkpoint.");
  return sparse_layers::RunMain(sparse_layers::layers::Run);
}
