#!/bin/bash
# The device measurement of `python -m dptune.bench gpu` and the engine's tests on a real CUDA
# device, as one command for a lent machine that reaches no network (how reports/benchmarks-gpu.md
# was made). Prepare here, in the repository root, then run `bash tools/device_check.sh` there
# with `.whl` and `.devdata` carried:
#   .whl/      wheels for the device's Python (3.12): array-api-compat, isal, and numpy 2.4.x
#              (numba-cuda 0.30.4 fails beside NumPy 2.5: np.row_stack is gone), e.g.
#              pip download --no-deps --only-binary=:all: --python-version 3.12 \
#                --platform manylinux_2_28_x86_64 -d .whl numpy==2.4.6 isal array-api-compat
#   .devdata/ml-1m.inter.gz   gzip of the ML-1M file `dptune data fetch ml-1m` caches (never
#              committed; without it a synthetic data set of ML-1M's shape stands in)
# Everything it writes goes to $OUT (the report, its JSON, the logs). BENCH_S / TEST_S bound the
# benchmark and the tests (seconds), so a lease's limit still returns what was measured.
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/.." || exit 3
OUT=${OUT:-/tmp/dptune-device}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl || { echo "wheel install failed"; exit 3; }
export PYTHONPATH=/tmp/site:$PWD
if [ -f .devdata/ml-1m.inter.gz ]; then
  mkdir -p /tmp/dd/ml-1m && gunzip -c .devdata/ml-1m.inter.gz > /tmp/dd/ml-1m/ml-1m.inter
  export DPTUNE_DATA=/tmp/dd
fi
[ -z "${CUDA_HOME:-}" ] && [ -d /usr/local/cuda ] && export CUDA_HOME=/usr/local/cuda
{ nvidia-smi; python3 -V
  python3 -c "from dptune.engine import engine_for; from dptune.engine._cuda import device_name
print('ENGINE', engine_for('cuda').name, device_name())"
} > "$OUT/env.txt" 2>&1
tail -3 "$OUT/env.txt"
grep -q '^ENGINE' "$OUT/env.txt" || { echo "no usable CUDA engine: see env.txt"; exit 4; }
t0=$(date +%s)
timeout "${BENCH_S:-300}" python3 -m dptune.bench gpu --out "$OUT/benchmarks-gpu.md" > "$OUT/bench.log" 2>&1
echo "bench rc=$? in $(( $(date +%s) - t0 )) s"; tail -12 "$OUT/bench.log"
t0=$(date +%s)
NUMBA_ENABLE_CUDASIM=0 timeout "${TEST_S:-150}" python3 -m pytest -q -p no:cacheprovider -rfs \
  -m "slow or not slow" -k "cuda or kernel" tests/engine/test_bpr_kernel.py \
  tests/engine/test_bpr_engine.py tests/engine/test_evaluate_engine.py \
  tests/engine/test_knn_engine.py > "$OUT/pytest.log" 2>&1
echo "tests rc=$? in $(( $(date +%s) - t0 )) s"; grep -E "passed|failed|^FAILED" "$OUT/pytest.log" | tail -12
