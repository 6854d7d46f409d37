#!/bin/bash
# build_profile_table.py on a made-up profile: a fit that started while a training held the one CPU slot
# holds it only from the training's end; a compile runs beside them without a slot.
set -euo pipefail
script="$1"
profile="$TEST_TMPDIR/made_up.profile.gz"
/usr/bin/python3 - "$profile" <<'PY'
import gzip, json, sys
def action(name, start_s, seconds):
    return {"cat": "action processing", "name": name, "ph": "X", "ts": start_s * 1e6, "dur": seconds * 1e6}
events = [action("Training //experiments/x:lm_sgatlin_s1", 0, 120),
          action("Fitting //experiments/x:sae_k8_s1", 30, 150),
          action("Compiling ops/core/topk.cc", 0, 6)]
with gzip.open(sys.argv[1], "wt") as f:
    json.dump({"traceEvents": events}, f)
PY
table="$(/usr/bin/python3 "$script" "$profile")"
echo "$table"
expect() { grep -qF -- "$1" <<< "$table" || { echo "missing row: $1" >&2; exit 1; }; }
expect "| Training sgatlin | 1 | 2.0 | 2.0 | 64.5% |"
expect "| Fitting topk sae | 1 | 2.5 | 1.0 | 32.3% |"
expect "| Compiling | 1 | 0.1 | 0.1 | 3.2% |"
expect "| all | 3 | 4.6 | 3.1 | 100% |"
echo PASS
