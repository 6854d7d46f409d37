#!/usr/bin/env bash
# Reference parity of one architecture: hf_parity_test.py HF_FORWARD ARCH, under Debian's python3-torch
# (tools/deps.txt), not whatever python3 comes first on PATH.
set -euo pipefail
exec /usr/bin/python3 models/tools/hf_parity_test.py "$@"
