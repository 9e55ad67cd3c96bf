"""The numba kernels are compiled (or loaded from numba's cache) once, in the parent, before the
validation bar starts: with the argument types the units use, so no unit compiles again, and
with a line saying so while it takes long, so that the bar's ETA is that of the units alone."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import tqdm
from conftest import write_synthetic_experiment

import dptune.sweeper._local as local
import dptune.sweeper._progress as progress
import dptune.sweeper._warmup as warmup
from dptune.config import load_experiment

#: Run in a fresh interpreter (no kernel compiled or loaded yet): warm the kernels, note every
#: kernel's compiled signatures, then sweep the experiment in this process (jobs = 1) and note
#: them again.
SCRIPT = """
import json, sys
import dptune
from dptune.config import load_experiment
from dptune.metrics import _top_n_select
from dptune.models._bpr import _bpr_epoch
from dptune.models._knn import _add_rows_of_weighted, _add_weighted_rows, _topk_rows
from dptune.sweeper._warmup import warm_kernels

kernels = {"_top_n_select": _top_n_select, "_bpr_epoch": _bpr_epoch, "_topk_rows": _topk_rows,
           "_add_weighted_rows": _add_weighted_rows,
           "_add_rows_of_weighted": _add_rows_of_weighted}

def signatures():
    return {name: sorted(map(str, k.signatures)) for name, k in kernels.items()}

exp = load_experiment(sys.argv[1])
before = signatures()
warmed = warm_kernels(exp)
after_warmup = signatures()
dptune.sweep(exp, results=sys.argv[2], jobs=1, progress=False)
print(json.dumps({"before": before, "warmed": warmed, "after_warmup": after_warmup,
                  "after_sweep": signatures()}))
"""

ITEMKNN = '\n[[algorithms]]\nname = "itemknn"\ntype = "itemknn"\ngrid = "{knn}"\n'


def _experiment(tmp_path, name="warm"):
    cfg = write_synthetic_experiment(tmp_path, name)
    cfg.write_text(cfg.read_text() + ITEMKNN.format(knn=tmp_path / "knn.toml"))
    return cfg


def test_the_units_compile_no_kernel_the_warmup_did_not(tmp_path):
    """Every kernel of UserKNN, ItemKNN, BPR-MF and the evaluation gets its signature from the
    warm-up; a whole sweep (validation, test split, noise floor) adds none."""
    cfg = _experiment(tmp_path)
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(cfg), str(tmp_path / "results")],
                         capture_output=True, text=True, check=True)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["warmed"] == ["userknn", "bpr-mf", "itemknn"]
    assert all(not sigs for sigs in got["before"].values()), got["before"]
    assert all(len(sigs) == 1 for sigs in got["after_warmup"].values()), got["after_warmup"]
    assert got["after_sweep"] == got["after_warmup"]


def test_only_builtin_models_on_the_cpu_are_warmed(tmp_path):
    cfg = _experiment(tmp_path)
    exp = load_experiment(cfg)
    assert warmup.kernel_types(exp) == ["userknn", "bpr-mf", "itemknn"]
    from dataclasses import replace
    assert warmup.kernel_types(replace(exp, sweep=replace(exp.sweep, device="cuda"))) == []
    own = replace(exp, algorithms=tuple(replace(a, type="cornac:MostPop") for a in exp.algorithms))
    assert warmup.kernel_types(own) == []
    assert warmup.warm_kernels(own) == []


def test_a_long_compilation_is_shown_before_the_validation_bar_starts(tmp_path, capsys,
                                                                    monkeypatch):
    """While the kernels take longer than COMPILING_AFTER_S (here 0), a line says "compiling
    kernels (first run only)"; the validation bar is created after it, so its clock (and ETA)
    starts when the kernels are ready. The stand-in compilation waits until the line is shown."""
    shown = threading.Event()

    class Line(tqdm.tqdm):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            if "compiling" in str(kwargs.get("desc", "")):
                shown.set()

    monkeypatch.setattr(tqdm, "tqdm", Line)
    monkeypatch.setattr(progress, "COMPILING_AFTER_S", 0.0)
    monkeypatch.setattr(warmup, "warm_kernels", lambda exp: shown.wait(300) and [])
    exp = load_experiment(_experiment(tmp_path))
    local.run_experiment(exp, tmp_path / "results", jobs=1, progress=True)
    err = capsys.readouterr().err
    assert shown.is_set()
    first = err.index("warm: compiling kernels (first run only)")
    assert first < err.index("warm: validation")


@pytest.mark.parametrize("done_before", [False, True])
def test_fast_kernels_or_a_finished_sweep_show_no_compiling_line(tmp_path, capsys, monkeypatch,
                                                                 done_before):
    """Kernels loaded from the cache (faster than COMPILING_AFTER_S) show nothing; a sweep with
    every validation unit done does not warm them at all."""
    calls = []
    monkeypatch.setattr(progress, "COMPILING_AFTER_S", 3600.0)
    monkeypatch.setattr(warmup, "warm_kernels", lambda exp: calls.append(exp.name) or [])
    exp = load_experiment(_experiment(tmp_path))
    if done_before:
        local.run_experiment(exp, tmp_path / "results", jobs=1, progress=False)
        calls.clear()
    local.run_experiment(exp, tmp_path / "results", jobs=1, progress=True)
    assert "compiling" not in capsys.readouterr().err
    assert calls == ([] if done_before else ["warm"])


def test_cold_kernels_names_what_numbas_cache_does_not_hold(tmp_path, monkeypatch):
    """With numba's cache pointed at an empty folder every kernel of the run is cold (the
    projection adds their compilation); an index file of one module there makes it warm."""
    from numba.core import config as numba_config
    from numba.core.caching import CacheImpl

    import dptune

    exp = load_experiment(_experiment(tmp_path))
    monkeypatch.setattr(numba_config, "CACHE_DIR", str(tmp_path / "numba"))
    assert warmup.cold_kernels(exp) == ["evaluation", "bpr", "knn", "analysis"]
    (bpr_file,) = warmup.KERNEL_SOURCES["bpr"]
    source = str(dptune.__file__).replace("__init__.py", bpr_file)
    for locator in CacheImpl._locator_classes:
        found = locator.from_function(test_cold_kernels_names_what_numbas_cache_does_not_hold,
                                      source)
        if found is not None:
            break
    index = Path(found.get_cache_path())
    assert index.is_relative_to(tmp_path / "numba")
    index.mkdir(parents=True, exist_ok=True)
    (index / "_bpr._bpr_epoch-85.py311.nbi").write_bytes(b"")
    assert warmup.cold_kernels(exp) == ["evaluation", "knn", "analysis"]
    # a sweep on a device compiles no CPU model kernel, only the analysis's
    monkeypatch.setattr(warmup, "kernel_types", lambda exp: [])
    assert warmup.cold_kernels(exp) == ["analysis"]
