// Prints the config overlay of one isoflop run: its name, the ladder model
// (scaling_ladder.h) and the FLOP budget; vocabulary and context come from the
// experiment's base config when experiment_config merges the two.
#include <cstdio>
#include <string>

#include "absl/flags/flag.h"
#include "analysis/scaling/scaling_ladder.h"
#include "base/common/status_macros.h"
#include "google/protobuf/text_format.h"
#include "ops/backend/torch_init.h"

ABSL_FLAG(std::string, ladder, "tiny",
          "paper (arXiv:2606.07414 App. B.2, Listing 2) or tiny (our CPU "
          "ladder).");
ABSL_FLAG(std::string, type, "sgatlin", "FFN type (LadderFfnTypes()).");
ABSL_FLAG(int, scale, 1, "Ladder scale s (tiny from 0, paper from 1).");
ABSL_FLAG(double, max_flops, 0,
          "Training FLOP budget (counted as the sgatlin code does).");
ABSL_FLAG(std::string, name, "", "Run name.");

namespace sparse_layers::analysis {
namespace {

absl::Status Run() {
  RETURN_IF_ERROR(
      FirstError({RequiredFlag(FLAGS_name), FlagAtLeast(FLAGS_scale, 0),
                  FlagInRange(FLAGS_max_flops, 0.0, 1e30)}));
  ASSIGN_OR_RETURN(const Ladder ladder,
                   ParseLadder(absl::GetFlag(FLAGS_ladder)));
  config::ExperimentConfig overlay;
  overlay.set_name(absl::GetFlag(FLAGS_name));
  ASSIGN_OR_RETURN(
      *overlay.mutable_model(),
      LadderModel(ladder, absl::GetFlag(FLAGS_type), absl::GetFlag(FLAGS_scale),
                  /*vocab_size=*/0, /*context_length=*/0));
  overlay.mutable_budget()->set_max_flops(absl::GetFlag(FLAGS_max_flops));
  std::string text;
  google::protobuf::TextFormat::PrintToString(overlay, &text);
  std::fputs(text.c_str(), stdout);
  return absl::OkStatus();
}

}  // namespace
}  // namespace sparse_layers::analysis

int main(int argc, char** argv) {
  sparse_layers::InitMain(argc, argv,
                          "ladder_overlay --type=T --scale=S --max_flops=F: "
                          "one isoflop run's config overlay");
  return sparse_layers::RunMain(sparse_layers::analysis::Run);
}
