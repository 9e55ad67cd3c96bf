#!/bin/bash
# The device measurement of `python -m dptune.bench gpu`, one real budgeted sweep on the device
# timed against its projection, and the engine's tests on a real CUDA device, as one command for
# a lent machine that reaches no network (how reports/benchmarks-gpu.md was made). Prepare here, in the repository root, then run `bash tools/device_check.sh` there
# with `.whl` and `.devdata` carried:
#   .whl/      wheels for the device's Python (3.12) of what its image lacks: array-api-compat,
#              isal, numpy 2.4.x (numba-cuda 0.30.4 fails beside NumPy 2.5: np.row_stack is
#              gone) and, for the sweep step (dptune run), optuna and what it imports (22 MB):
#              pip download --no-deps --only-binary=:all: --python-version 3.12 \
#                --platform manylinux_2_28_x86_64 -d .whl numpy==2.4.6 isal array-api-compat \
#                optuna==5.0.0 sqlalchemy==2.1.9 alembic==1.20.1 mako==1.4.3 colorlog==6.12.0
#   .devdata/ml-1m.inter.gz   gzip of the ML-1M file `dptune data fetch ml-1m` caches (never
#              committed; without it a synthetic data set of ML-1M's shape stands in for the
#              bench step, and the sweep step, which needs the real one, fails in one line)
# Everything it writes goes to $OUT (the report, its JSON, the logs).
# STEPS (default "bench sweep tests") chooses and orders the steps, so that they fit a lease's
# 10-minute calls, e.g. STEPS="bench tests" (about 4 minutes on an H100), then at once, on the
# still warm machine, STEPS=sweep SWEEP_S=580 (about 7 minutes projected, alone in its call so
# that a slower run than projected still fits):
#   bench  python -m dptune.bench gpu on BENCH_DATA (default ml-1m; "ml-1m synth:amazon-movies"
#          for both, about 3 minutes): benchmarks-gpu.md and .json; the JSON is also kept in
#          results/device-check/ (ignored, not carried, so kept for a later call's sweep on the
#          same warm machine; a carried path would be replaced by this side's copy)
#   sweep  python -m dptune.bench sweep: one real budgeted sweep of the ML-1M design on the
#          device (SWEEP_BUDGET units per algorithm, default 15 = one round, about 7 minutes
#          projected), timed whole against the sweep's projection of the same units, priced by
#          the bench step's costs where there are some: benchmarks-sweep-gpu.md and .json
#   tests  the engine's tests with the simulator off
# BENCH_S / SWEEP_S / TEST_S bound each step (seconds), so a lease's limit still returns what
# was measured.
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
for step in ${STEPS:-bench sweep tests}; do
  t0=$(date +%s)
  case $step in
  bench)
    ds=""; for d in ${BENCH_DATA:-ml-1m}; do ds="$ds --dataset $d"; done
    # shellcheck disable=SC2086
    timeout "${BENCH_S:-300}" python3 -m dptune.bench gpu $ds --out "$OUT/benchmarks-gpu.md" \
      > "$OUT/bench.log" 2>&1
    echo "bench rc=$? in $(( $(date +%s) - t0 )) s"; tail -12 "$OUT/bench.log"
    [ -f "$OUT/benchmarks-gpu.json" ] && mkdir -p results/device-check \
      && cp "$OUT/benchmarks-gpu.json" results/device-check/benchmarks-gpu.json ;;
  sweep)
    costs=results/device-check/benchmarks-gpu.json
    if [ -f $costs ]; then costs="--costs $costs"; else costs=""; fi
    # shellcheck disable=SC2086
    timeout "${SWEEP_S:-540}" python3 -m dptune.bench sweep experiments/anelli2019-ml1m-design.toml \
      --device cuda --jobs 1 --budget "${SWEEP_BUDGET:-15}" $costs \
      --out "$OUT/benchmarks-sweep-gpu.md" > "$OUT/sweep.log" 2>&1
    echo "sweep rc=$? in $(( $(date +%s) - t0 )) s"; tail -8 "$OUT/sweep.log" ;;
  tests)
    NUMBA_ENABLE_CUDASIM=0 timeout "${TEST_S:-150}" python3 -m pytest -q -p no:cacheprovider -rfs \
      -m "slow or not slow" -k "cuda or kernel" tests/engine/test_bpr_kernel.py \
      tests/engine/test_bpr_engine.py tests/engine/test_evaluate_engine.py \
      tests/engine/test_knn_engine.py > "$OUT/pytest.log" 2>&1
    echo "tests rc=$? in $(( $(date +%s) - t0 )) s"
    grep -E "passed|failed|^FAILED" "$OUT/pytest.log" | tail -12 ;;
  *) echo "unknown step $step (bench, sweep, tests)"; exit 3 ;;
  esac
done
