"""Where a build's time went: sums the executed actions of Bazel JSON profiles (one or several, e.g. a
long build resumed in parts) by action kind and prints a Markdown table (count, wall time, share):
  ./tools/bazel build //reports --profile=/tmp/part1.profile.gz ...
  python3 pipelines/report/build_profile_table.py /tmp/part*.profile.gz
Kinds: the progress verb (Training, Fitting, Caching, Running, ...) and, for trainings and fits, the
layer the target's name carries (sgatlin, peer, moe_x, transcoder, ...). Cache hits take no time and
are not counted; an action interrupted in one part and rerun in the next counts both times. A profile
times an action from start to end ("wall"), including its wait for a CPU slot (base/common/cpu_slots.h),
so with several actions in flight the walls sum past the build's time. "Held" is each action's time
holding the slot, for a build alone on a machine with one slot (2 cores, 2-thread tools): the holds are
then serial, and an action held the slot from the later of its start and the previous holder's end.
Bazel's own actions (compiles, links, symlinks, file writes, genrules) take no slot; "held" counts their
wall time."""
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


# Progress verbs of Bazel's own actions, which run without a CPU slot.
SLOT_FREE_VERBS = {"BazelWorkspaceStatusAction", "Compiling", "Creating", "Executing", "Linking", "Placing",
                   "Setting", "SolibSymlink", "Symlinking", "Tabulating", "Writing"}


def actions_with_holds(events):
    """(name, wall seconds, held seconds) of each executed action of one profile."""
    actions = [e for e in events if e.get("ph") == "X" and e.get("cat") == "action processing"]
    held = {}
    previous_end = None
    for event in sorted(actions, key=lambda e: e["ts"] + e["dur"]):
        end = event["ts"] + event["dur"]
        if event["name"].split(" ")[0] in SLOT_FREE_VERBS:
            held[id(event)] = event["dur"]
            continue
        start = event["ts"] if previous_end is None else max(event["ts"], previous_end)
        held[id(event)] = end - start
        previous_end = end
    return [(e["name"], e["dur"] / 1e6, held[id(e)] / 1e6) for e in actions]


def main(paths):
    by_kind = collections.defaultdict(lambda: [0, 0.0, 0.0])
    by_experiment = collections.defaultdict(lambda: [0.0, 0.0])
    for path in paths:
        with gzip.open(path) as f:
            data = json.load(f)
        events = data["traceEvents"] if isinstance(data, dict) else data
        for name, wall, held in actions_with_holds(events):
            kind, experiment = kind_of(name)
            by_kind[kind][0] += 1
            by_kind[kind][1] += wall
            by_kind[kind][2] += held
            by_experiment[experiment][0] += wall
            by_experiment[experiment][1] += held
    total = sum(held for _, _, held in by_kind.values()) or 1.0
    print("| action kind | count | wall (min) | held (min) | share of held |\n|---|---|---|---|---|")
    for kind, (count, wall, held) in sorted(by_kind.items(), key=lambda item: -item[1][2]):
        print(f"| {kind} | {count} | {wall / 60:.1f} | {held / 60:.1f} | {100 * held / total:.1f}% |")
    walls = sum(wall for _, wall, _ in by_kind.values())
    print(f"| all | {sum(c for c, _, _ in by_kind.values())} | {walls / 60:.1f} | {total / 60:.1f} | 100% |\n")
    print("| package | wall (min) | held (min) | share of held |\n|---|---|---|---|")
    for experiment, (wall, held) in sorted(by_experiment.items(), key=lambda item: -item[1][1]):
        print(f"| {experiment} | {wall / 60:.1f} | {held / 60:.1f} | {100 * held / total:.1f}% |")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: build_profile_table.py PROFILE.gz [PROFILE.gz ...]")
    main(sys.argv[1:])
