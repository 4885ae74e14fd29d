#!/usr/bin/env bash
# The training stages on a GPU in one command (docs/gpu.md): `emoharbor evolve sft`, `dpo` and `grpo` (whole
# episodes with the rule-based user) for a few steps each on a small model built from a config, printing each
# step's time and the peak GPU memory, in under 8 minutes.
#   bash bench/gpu_check.sh            CUDA, bfloat16
#   bash bench/gpu_check.sh --cpu      its dry run: the CPU, float32, tiny sizes, the same stages and steps
#   bash bench/gpu_check.sh --wheels   (where pip reaches PyPI) the wheels a GPU machine lacks, into .whl/
# Other options: python bench/gpu_check.py --help. Python: $PYTHON, else .venv/bin/python where there is one,
# else python3. The wheels in .whl/, when they are for this Python, are installed first, offline and without
# their dependencies, into $GPU_CHECK_SITE (/tmp/gpu-check-site); the checkout's src/ comes first on the path.
set -euo pipefail
cd "$(dirname "$0")/.."
py="${PYTHON:-}"
if [ -z "$py" ]; then
  if [ -x .venv/bin/python ]; then py=.venv/bin/python; else py=python3; fi
fi
site=""
if [ "${1:-}" != "--wheels" ] && compgen -G ".whl/*.whl" >/dev/null; then
  want="$(cat .whl/python-version 2>/dev/null || true)"
  have="$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
  if [ -z "$want" ] || [ "$want" = "$have" ]; then
    site="${GPU_CHECK_SITE:-/tmp/gpu-check-site}"
    "$py" -m pip install -q --disable-pip-version-check --no-index --no-deps --no-compile --no-cache-dir \
      --upgrade --target "$site" .whl/*.whl
  else
    echo "gpu_check.sh: the wheels in .whl/ are for Python $want, this is $have: not installed" >&2
  fi
fi
export PYTHONPATH="$PWD/src${site:+:$site}${PYTHONPATH:+:$PYTHONPATH}"
exec "$py" bench/gpu_check.py "$@"
