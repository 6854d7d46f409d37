"""Where a build's time went: sums the executed actions of Bazel JSON profiles (one or several, e.g. a
long build resumed in parts) by action kind and prints a Markdown table (count, wall time, share):
  ./tools/bazel build //reports --profile=/tmp/part1.profile.gz ...
  python3 pipelines/report/build_profile_table.py /tmp/part*.profile.gz
Kinds: the progress verb (Training, Fitting, Caching, Running, ...) and, for trainings and fits, the
layer the target's name carries (sgatlin, peer, moe_x, transcoder, ...). Cache hits take no time and
are not counted; an action interrupted in one part and rerun in the next counts both times. A profile
times an action from start to end, including its wait for a CPU slot (base/common/cpu_slots.h): with
several actions in flight on 2 cores the sums exceed the build's wall time, so compare shares, or run
the build with --jobs=1 for costs that add up."""
import collections
import gzip
import json
import re
import sys

# Target-name fragments to layer kinds, first match wins (names as the experiments' BUILD files give them).
LAYER_PATTERNS = [
    ("cp", r"_cp_"), ("mxd", r"mxd"), ("skip transcoder", r"_stc_|skip"), ("transcoder", r"_tc_|transcoder"),
    ("topk sae", r"sae"), ("lorsa", r"lorsa"), ("moe_x", r"moe_x"), ("switch", r"switch"),
    ("sgatlin", r"sgatlin"), ("peer", r"peer"), ("gpt-oss moe", r"(^|_)moe_"), ("mohd", r"mohd"),
    ("mlp/dense", r"mlp|dense|gelu|relu|geglu|solu|swiglu|lm"),
]


def kind_of(description):
    verb, _, label = description.partition(" ")
    target = label.rsplit(":", 1)[-1]
    experiment = label.split(":")[0].replace("//experiments/", "")
    if verb in ("Training", "Fitting"):
        for layer, pattern in LAYER_PATTERNS:
            if re.search(pattern, target):
                return f"{verb} {layer}", experiment
        return f"{verb} other", experiment
    return verb, experiment


def main(paths):
    by_kind = collections.defaultdict(lambda: [0, 0.0])
    by_experiment = collections.defaultdict(float)
    for path in paths:
        with gzip.open(path) as f:
            data = json.load(f)
        events = data["traceEvents"] if isinstance(data, dict) else data
        for event in events:
            if event.get("ph") != "X" or event.get("cat") != "action processing":
                continue
            seconds = event["dur"] / 1e6
            kind, experiment = kind_of(event["name"])
            by_kind[kind][0] += 1
            by_kind[kind][1] += seconds
            by_experiment[experiment] += seconds
    total = sum(seconds for _, seconds in by_kind.values()) or 1.0
    print(f"| action kind | count | wall (min) | share |\n|---|---|---|---|")
    for kind, (count, seconds) in sorted(by_kind.items(), key=lambda item: -item[1][1]):
        print(f"| {kind} | {count} | {seconds / 60:.1f} | {100 * seconds / total:.1f}% |")
    print(f"| all | {sum(c for c, _ in by_kind.values())} | {total / 60:.1f} | 100% |\n")
    print("| package | wall (min) | share |\n|---|---|---|")
    for experiment, seconds in sorted(by_experiment.items(), key=lambda item: -item[1]):
        print(f"| {experiment} | {seconds / 60:.1f} | {100 * seconds / total:.1f}% |")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: build_profile_table.py PROFILE.gz [PROFILE.gz ...]")
    main(sys.argv[1:])
