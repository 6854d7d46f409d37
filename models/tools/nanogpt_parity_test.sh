#!/usr/bin/env bash
# Reference parity of nanoGPT checkpoints: nanogpt_parity_test.py HF_FORWARD NANOGPT_VOCABULARY, under Debian's
# python3-torch (tools/deps.txt), not whatever python3 comes first on PATH.
set -euo pipefail
exec /usr/bin/python3 models/tools/nanogpt_parity_test.py "$@"
