// plan_seeds: the seed plan of a claims file from a pilot's intervals
// (analysis/claims/seed_plan.h). Prints one Markdown row per claim.
//   plan_seeds --claims=claims.textproto --pilot=verdicts.csv
//       [--power=0.8] [--max_seeds=N]
#include <iostream>
#include <string>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "analysis/claims/judge.h"
#include "analysis/claims/seed_plan.h"
#include "analysis/claims/tidy_table.h"
#include "base/common/main.h"
#include "base/common/status_macros.h"

ABSL_FLAG(std::string, claims, "", "the experiment's claims.textproto");
ABSL_FLAG(std::string, pilot, "",
          "a pilot's verdicts.csv (or a CSV with id, level, effect, ci_low, "
          "ci_high, n)");
ABSL_FLAG(double, power, 0.8, "power asked at each claim's effect of interest");
ABSL_FLAG(int, max_seeds, 0,
          "the seeds the budget allows (marks claims needing more)");

namespace {

absl::Status Run() {
  const double power = absl::GetFlag(FLAGS_power);
  if (absl::GetFlag(FLAGS_claims).empty() || absl::GetFlag(FLAGS_pilot).empty())
    return absl::InvalidArgumentError("--claims and --pilot are required");
  if (!(power > 0 && power < 1))
    return absl::InvalidArgumentError("--power must lie in (0, 1)");
  ASSIGN_OR_RETURN(auto claims, sparse_layers::claims::LoadClaimSet(
                                    absl::GetFlag(FLAGS_claims)));
  ASSIGN_OR_RETURN(auto pilot,
                   sparse_layers::claims::TidyTable::ReadConcatenated(
                       {absl::GetFlag(FLAGS_pilot)}));
  pilot.set_name(absl::GetFlag(FLAGS_pilot));
  ASSIGN_OR_RETURN(
      auto plans, sparse_layers::claims::PlanSeeds(claims, pilot, power, 1000));
  std::cout << sparse_layers::claims::RenderSeedPlan(
      plans, power, absl::GetFlag(FLAGS_max_seeds));
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  const auto positional = sparse_layers::ParseMainFlags(
      argc, argv,
      "plan_seeds --claims=F --pilot=CSV [--power=0.8] [--max_seeds=N]");
  return sparse_layers::RunMain([&]() -> absl::Status {
    if (!positional.empty())
      return absl::InvalidArgumentError("unexpected argument " + positional[0]);
    return Run();
  });
}
