#include "pipelines/train/op_profile.h"

#include <torch/csrc/autograd/profiler_legacy.h>

#include <algorithm>
#include <map>

#include "absl/strings/str_format.h"

namespace sparse_layers::train {

OpProfile ProfileOps(const std::function<void()>& work) {
  namespace profiler = torch::autograd::profiler;
  profiler::enableProfilerLegacy(torch::profiler::impl::ProfilerConfig(
      torch::profiler::impl::ProfilerState::CPU));
  work();
  const profiler::thread_event_lists lists = profiler::disableProfilerLegacy();
  std::map<std::string, OpTime> by_name;
  for (const std::vector<profiler::LegacyEvent>& events : lists) {
    // An open range: its push event and the inclusive time of its children.
    struct Open {
      const profiler::LegacyEvent* push;
      double children_us;
    };
    std::vector<Open> stack;
    for (const profiler::LegacyEvent& event : events) {
      if (event.kind() == profiler::EventKind::PushRange) {
        stack.push_back({&event, 0.0});
      } else if (event.kind() == profiler::EventKind::PopRange &&
                 !stack.empty()) {
        const Open open = stack.back();
        stack.pop_back();
        const double inclusive_us = open.push->cpuElapsedUs(event);
        OpTime& op = by_name[open.push->name()];
        op.name = open.push->name();
        op.self_ms += (inclusive_us - open.children_us) / 1e3;
        ++op.calls;
        if (!stack.empty()) stack.back().children_us += inclusive_us;
      }
    }
  }
  OpProfile profile;
  for (auto& [name, op] : by_name) {
    profile.total_ms += op.self_ms;
    profile.ops.push_back(std::move(op));
  }
  // Ties broken by name: the same order for the same times.
  std::sort(profile.ops.begin(), profile.ops.end(),
            [](const OpTime& a, const OpTime& b) {
              return a.self_ms != b.self_ms ? a.self_ms > b.self_ms
                                            : a.name < b.name;
            });
  return profile;
}

std::string FormatOpProfile(const OpProfile& profile, int top) {
  std::string out = absl::StrFormat("%-60s %10s %7s %7s\n", "op", "self ms",
                                    "share", "calls");
  double rest_ms = 0;
  int64_t rest_calls = 0;
  for (size_t i = 0; i < profile.ops.size(); ++i) {
    const OpTime& op = profile.ops[i];
    if (static_cast<int>(i) >= top) {
      rest_ms += op.self_ms;
      rest_calls += op.calls;
      continue;
    }
    absl::StrAppendFormat(&out, "%-60s %10.1f %6.1f%% %7d\n", op.name,
                          op.self_ms, 100 * op.self_ms / profile.total_ms,
                          op.calls);
  }
  absl::StrAppendFormat(&out, "%-60s %10.1f %6.1f%% %7d\n", "(other ops)",
                        rest_ms, 100 * rest_ms / profile.total_ms, rest_calls);
  absl::StrAppendFormat(&out, "%-60s %10.1f\n", "total", profile.total_ms);
  return out;
}

}  // namespace sparse_layers::train
