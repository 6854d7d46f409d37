// Loads and validates experiment configs (merged in order), printing "ok" or
// one error line.
#include <cstdio>
#include <string>
#include <vector>

#include "tools/common/init.h"
#include "tools/config/config_loader.h"

int main(int argc, char** argv) {
  std::vector<std::string> paths = sparse_layers::InitMain(
      argc, argv,
      "check_config FILE.textproto [OVERLAY.textproto ...]: validate an "
      "ExperimentConfig");
  absl::StatusOr<sparse_layers::config::ExperimentConfig> config =
      sparse_layers::config::LoadExperimentConfig(paths);
  if (!config.ok()) return sparse_layers::ExitWithError(config.status());
  std::printf("ok: %s\n", config->name().c_str());
  return 0;
}
