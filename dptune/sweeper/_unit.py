"""One unit: train the unit's model(s) on its fold, evaluate every configuration, write the part."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

from dptune.config import Experiment
from dptune.engine import engine_for, evaluate_on, family_on
from dptune.errors import DptuneError, input_error, plain
from dptune.metrics import METRICS, NaNScores
from dptune.models import get_family
from dptune.models._adapters import ScoreShapeError, SignatureFamily
from dptune.store._store import PARTS, ResultStore, UnitResult, part_name
from dptune.sweeper._plan import Task, _algorithm, derive_seed
from dptune.sweeper._prepare import prepare


def run_unit(exp: Experiment, task: Task, store: ResultStore) -> UnitResult:
    """Train the unit's model(s) on the task's fold, evaluate every config, write the part
    (:func:`compute_unit`, then :meth:`ResultStore.write_unit` in line: one unit at a time,
    as the test split's units and the runner's recovery pass take them; the sweep workers
    hand their parts to a :class:`dptune.store._writer.PartWriter` instead)."""
    res = compute_unit(exp, task)
    store.write_unit(res)
    return res


def compute_unit(exp: Experiment, task: Task) -> UnitResult:
    """Train the unit's model(s) on the task's fold and evaluate every config: the unit's
    :class:`UnitResult`, not written yet."""
    prep = prepare(exp)
    fd = prep.fold(task.fold)
    alg = _algorithm(exp, task.algorithm)
    grid = exp.grids[task.algorithm]
    unit_cfgs = [grid.config(c) for c in task.config_ids]  # not the whole grid, for every unit
    seed = derive_seed(exp.seed, task.algorithm, task.fold, task.params)
    ev = exp.evaluation
    rows = [METRICS.index(m) for m in ev.metrics]
    cutoffs = tuple(int(c) for c in ev.cutoffs)
    eng = engine_for(exp.sweep.device)
    fitted = family_on(get_family(alg.type), eng).fit_unit(fd.train, unit_cfgs, seed)
    out: dict[int, tuple[np.ndarray, float, float]] = {}
    t0 = time.perf_counter()
    while True:
        # an outside family fits its configurations one by one, in order: the next is the one
        # whose fit may raise
        upcoming = task.config_ids[min(len(out), len(task.config_ids) - 1)]
        with named_model(exp, task.algorithm, upcoming, task.fold, "fit"):
            item = next(fitted, None)
        if item is None:
            break
        local, model = item
        t1 = time.perf_counter()
        cid = task.config_ids[local]
        with named_model(exp, task.algorithm, cid, task.fold, "score"):
            vals = evaluate_on(eng, model, fd.users, fd.train, fd.relevant, cutoffs, fd.efd,
                               fd.epc, block=ev.user_block,
                               relevance_aware=ev.novelty == "relevance-aware")
        t2 = time.perf_counter()
        out[cid] = (np.asarray(vals)[rows], t1 - t0, t2 - t1)
        t0 = time.perf_counter()
    ids = tuple(sorted(out))
    return UnitResult(
        algorithm=task.algorithm, fold=task.fold, unit=task.unit, seed=seed,
        metrics=tuple(ev.metrics), cutoffs=cutoffs, users=fd.users,
        config_ids=ids, values=tuple(out[c][0] for c in ids),
        fit_seconds=tuple(out[c][1] for c in ids), eval_seconds=tuple(out[c][2] for c in ids),
    )


@contextmanager
def named_model(exp: Experiment, algorithm: str, config_id: int, fold: str,
                step: str = "score") -> Iterator[None]:
    """A model's NaN scores (:class:`dptune.metrics.NaNScores`) as one line naming the
    experiment's algorithm, its model type, the configuration and the fold, and how many
    items (exit code 2): the run stops, as for any unit that fails. So is a score block of the
    wrong shape from your own model (:class:`~dptune.models._adapters.ScoreShapeError`, which
    alone names only the model type). For a model from outside
    dptune (a cornac, implicit or your own model: a
    :class:`~dptune.models._adapters.SignatureFamily`) any exception its ``step`` (``fit`` or
    ``score``) raises is such a line too, with the exception's type and first line: only the model itself can
    refuse some values of its grid, and its traceback is not dptune's (a built-in model's
    exception stays one, a defect to report)."""

    def line(problem: str) -> DptuneError:
        alg = _algorithm(exp, algorithm)
        i = [a.name for a in exp.algorithms].index(algorithm)
        cfg = exp.grids[algorithm].config(config_id)
        shown = ", ".join(f"{k}={plain(v)}" for k, v in cfg.items()) or "no hyperparameter"
        where = "the test split" if fold == "test" else f"fold {fold}"
        return input_error(exp.source, f"algorithms[{i}]", f"model {alg.type} ({algorithm}), "
                           f"configuration {config_id} ({shown}), on {where}: {problem}")

    try:
        yield
    except NaNScores as err:
        raise line(f"score() returned NaN for {err.items} of {err.n_items} items ({err.users} "
                   "users); a model must score every item with a number (-inf to rank an item "
                   "last)") from None
    except ScoreShapeError as err:  # your own model's score(): the shape it returned
        raise line(f"score() {err.problem}") from None
    except DptuneError:
        raise
    except Exception as err:  # noqa: BLE001 - an outside model's own refusal, named
        if not isinstance(get_family(_algorithm(exp, algorithm).type), SignatureFamily):
            raise
        text = str(err).strip().splitlines()
        raise line(f"{step}() raised {type(err).__name__}"
                   + (f": {text[0][:200]}" if text else "")) from None


def _primary_mean(exp: Experiment, store: ResultStore, task: Task) -> float:
    """The best mean of the primary metric among the unit's configs (the value optuna records)."""
    path = store.root / PARTS / part_name(task.algorithm, task.fold, task.unit)
    meta = store.part_meta(path)
    key = f"{exp.analysis.primary_metric}@{exp.analysis.primary_cutoff}"
    vals = [m.get(key, float("nan")) for m in meta["means"].values()]
    return float(np.nanmax(vals)) if vals else float("nan")
