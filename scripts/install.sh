#!/usr/bin/env bash
# Creates .venv (if missing) and installs cheapqa into it.
# torch is installed first, pinned, and the CPU build of it wherever the PyTorch CPU index
# answers (TORCH_CPU_INDEX; empty skips it): the build on PyPI is the CUDA one, gigabytes
# more. Where the index does not answer within a few seconds (no internet, a mirror only),
# the pinned torch comes from pip's configured index or wheel folder.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
TORCH="torch==2.13.0"
TORCH_CPU_INDEX=${TORCH_CPU_INDEX-https://download.pytorch.org/whl/cpu}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip

index_answers() {
  # At most about 3 s, name lookup included (urlopen's timeout does not bound the lookup).
  [ -n "$TORCH_CPU_INDEX" ] && .venv/bin/python - "$TORCH_CPU_INDEX/torch/" <<'PY'
import sys
import threading
import urllib.request

answered = []


def probe() -> None:
    try:
        with urllib.request.urlopen(sys.argv[1], timeout=3) as response:
            answered.append(response.status == 200)
    except Exception:
        pass


thread = threading.Thread(target=probe, daemon=True)
thread.start()
thread.join(3)
sys.exit(0 if answered == [True] else 1)
PY
}

# 2.13.0+cpu on the CPU index outranks PyPI's 2.13.0, so pip takes it; pip's own indexes
# still serve torch's dependencies. Should that install fail all the same, the plain pin.
if index_answers; then
  echo "torch: the CPU build from $TORCH_CPU_INDEX"
  .venv/bin/python -m pip install --quiet --extra-index-url "$TORCH_CPU_INDEX" "$TORCH" ||
    .venv/bin/python -m pip install --quiet "$TORCH"
else
  echo "torch: ${TORCH_CPU_INDEX:-the CPU index} not reachable; $TORCH from pip's own index"
  .venv/bin/python -m pip install --quiet "$TORCH"
fi
.venv/bin/python -m pip install --quiet -e ".[dev]"
