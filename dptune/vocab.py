"""One vocabulary for every stage: metric and algorithm keys, their order, display names and
colours, hyperparameter names, fold order and the number formats of written files.

Every table, figure, CSV and legend takes its names and orders from here, so that a metric is
spelled, ordered and coloured the same way everywhere.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

__all__ = [
    "FORMATS",
    "TESTS",
    "CORRECTIONS",
    "DEVICES",
    "METRICS",
    "METRIC_RANGES",
    "RULE_MARGIN",
    "RULE_PLAIN",
    "TABLE_METRIC_ORDER",
    "METRIC_NAMES",
    "METRIC_COLORS",
    "EXTRA_COLORS",
    "ALGORITHM_NAMES",
    "ALGORITHM_ORDER",
    "HYPERPARAMETER_NAMES",
    "HYPERPARAMETER_ORDER",
    "FACTOR_MODEL_NAMES",
    "CSV_FLOAT",
    "SEED_RANGE",
    "NA_TEXT",
    "na_values",
    "display_algorithm",
    "display_metric",
    "metric_name",
    "value_norm",
    "display_value",
    "display_params",
    "display_hyperparameter",
    "ordered",
    "metric_color",
    "fold_key",
    "metric_rank",
    "metric_key",
    "TIE_TOL",
    "tie_value",
    "same_values",
]

#: Ratings file formats the readers understand (:func:`dptune.data.read_ratings`); "auto" guesses.
FORMATS: tuple[str, ...] = ("auto", "ml-dat", "ml-udata", "ml-csv", "recbole", "amazon", "csv",
                            "parquet")
#: Paired significance tests (:func:`dptune.analysis.dp.paired_tests.paired_pvalues`), as options and flags name them.
TESTS: tuple[str, ...] = ("t", "wilcoxon", "bootstrap", "permutation")
#: Former names of analysis options and the option that replaced each: an ``[analysis]`` key,
#: an options mapping or a flag (``--max-pairs``) under a former name is refused with one line
#: naming the new one, never read silently.
RENAMED_OPTIONS: dict[str, str] = {"n_pairs": "pairs", "max_pairs": "pairs"}
#: Multiple-comparison corrections of Sakai's DP.
CORRECTIONS: tuple[str, ...] = ("none", "holm", "bh")
#: Where a sweep trains and evaluates (``[sweep] device``, ``--device``): the compiled host
#: engine, or the array engine on a CUDA device (:mod:`dptune.engine`).
DEVICES: tuple[str, ...] = ("cpu", "cuda")
#: Metric keys in evaluation order (the order of every long output table: dp.csv, curves.csv).
METRICS: tuple[str, ...] = ("ndcg", "precision", "recall", "mrr", "efd", "epc")
#: Column order of metrics in the report's tables and legends (the paper's Table 3 order).
TABLE_METRIC_ORDER: tuple[str, ...] = ("efd", "epc", "mrr", "ndcg", "precision", "recall")
#: The values each metric of :data:`METRICS` can take for one user (:mod:`dptune.metrics` gives
#: the formulas): nDCG, Precision, Recall, MRR and EPC lie in [0, 1]; EFD, a sum of
#: ``-log2`` of shares weighted by a normalised discount, is >= 0 and unbounded. A per-user
#: table from outside dptune that names one of these metrics is checked against its range
#: (:func:`dptune.store.check_per_user`): a value outside it is another quantity under the
#: metric's name (a difference, a z-score, a column taken for another).
METRIC_RANGES: dict[str, tuple[float, float]] = {
    "ndcg": (0.0, 1.0),
    "precision": (0.0, 1.0),
    "recall": (0.0, 1.0),
    "mrr": (0.0, 1.0),
    "efd": (0.0, math.inf),
    "epc": (0.0, 1.0),
}
#: Display names of the metric keys.
METRIC_NAMES: dict[str, str] = {
    "ndcg": "nDCG",
    "precision": "Precision",
    "recall": "Recall",
    "mrr": "MRR",
    "efd": "EFD",
    "epc": "EPC",
}
#: A fixed colour per metric so that every panel and every figure agree.
METRIC_COLORS: dict[str, str] = {
    "efd": "#9467bd",
    "epc": "#8c564b",
    "mrr": "#d62728",
    "ndcg": "#1f77b4",
    "precision": "#2ca02c",
    "recall": "#ff7f0e",
}
#: Colours handed in turn to metrics that have none above.
EXTRA_COLORS: tuple[str, ...] = ("#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#000000")

#: Display names of the algorithm keys used by the sweep; other keys are shown as given.
ALGORITHM_NAMES: dict[str, str] = {"userknn": "User-kNN", "itemknn": "Item-kNN", "bpr-mf": "BPR-MF"}
#: Row order of algorithms (the paper's Table 3 order); unknown algorithms follow, sorted.
ALGORITHM_ORDER: tuple[str, ...] = ("itemknn", "userknn", "bpr-mf")

#: Display names of the hyperparameter keys of ``grids/*.toml``; others are shown as given.
HYPERPARAMETER_NAMES: dict[str, str] = {
    "factors": "Latent factors",
    "iterations": "Iterations",
    "epochs": "Iterations",
    "learning_rate": "Learning rate",
}
#: Parts of an algorithm's name that say its ``k`` is a number of latent factors (cornac's BPR,
#: MF, WMF, PMF, NMF, ALS-style models; :func:`display_hyperparameter`).
FACTOR_MODEL_NAMES: tuple[str, ...] = ("bpr", "mf", "als")
#: Default row order of hyperparameters (the paper's Table 5 order); others follow, sorted.
HYPERPARAMETER_ORDER: tuple[str, ...] = ("factors", "iterations", "epochs", "learning_rate", "k")

#: printf format of floats in every written CSV (enough digits to round-trip a float32 value).
CSV_FLOAT = "%.10g"

#: The slice study's default for the fewest users a slice must have in every fold for its
#: metrics' DPs to be ranked, counted in the findings and drawn (``dptune slices
#: --min-users``). Below about ten users a paired test has little power, and a metric of few
#: levels (precision@1, a hit) gives it p-values of few levels: the ranking of the metrics
#: would be read off ties and noise. A reporting rule, not a test.
SLICE_MIN_USERS = 10

#: The bases of the slice study's log-scaled bins (``dptune slices --base``,
#: ``run_slices_study(base=...)``): a base beyond int64 failed in numpy's log with a
#: traceback, and past a million every count a user or item holds falls in one bin, so a larger
#: base is a typo.
SLICE_BASE_RANGE = (2, 1_000_000)

#: The range of every seed an experiment or the analysis takes: 32-bit (numpy's and optuna's
#: generators take no larger seed; a larger analysis seed silently sampled other pairs).
SEED_RANGE = (0, 2**32 - 1)

#: What marks a missing number in a text file that dptune reads (pandas' default spellings:
#: R's ``NA``, Excel's ``#N/A``, ``nan``, ...). An id column (a user, an item, a system) knows
#: only the empty cell: a user called ``NA`` or ``null`` is a user.
NA_TEXT = ("", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND",
           "1.#QNAN", "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null")


def na_values(columns: Iterable[str], ids: Iterable[str]) -> dict[str, list[str]]:
    """pandas' ``na_values`` (with ``keep_default_na=False``) for a text file's ``columns``:
    an id column (one of ``ids``) knows only the empty cell as missing, any other column
    :data:`NA_TEXT` too."""
    ids = set(ids)
    return {c: [""] if c in ids else list(NA_TEXT) for c in columns}


def display_algorithm(key: str) -> str:
    """Return the display name of an algorithm key (``userknn`` -> ``User-kNN``)."""
    return ALGORITHM_NAMES.get(str(key), str(key))


def metric_name(name: str) -> str:
    """The vocabulary's key of a metric name as a user may write it (``nDCG``, ``NDCG``,
    `` ndcg `` -> ``ndcg``: case and surrounding blanks ignored); a name that is none of
    :data:`METRICS` is kept as written, blanks stripped (an outside metric of its own)."""
    text = str(name).strip()
    return text.lower() if text.lower() in METRICS else text


def display_metric(metric: str, cutoff: int | None = None) -> str:
    """Return the display name of a metric, with ``@cutoff`` when given (``nDCG@10``)."""
    name = METRIC_NAMES.get(str(metric), str(metric))
    return name if cutoff is None else f"{name}@{int(cutoff)}"


def display_hyperparameter(key: str, algorithm: str | None = None) -> str:
    """Return the display name of a hyperparameter key (``learning_rate`` -> ``Learning rate``).

    ``k`` means two things: the neighbourhood size of the kNN models (User-kNN, Item-kNN,
    cornac's UserKNN/ItemKNN) and the number of latent factors of cornac's factor models (BPR,
    MF, WMF, ...). With the ``algorithm`` it belongs to, it is "Nearest neighbors" when the
    algorithm's name contains ``knn``, "Latent factors" when it names a factor model
    (:data:`FACTOR_MODEL_NAMES`), else plain ``k``: an algorithm of a per-user table can be
    anything, and its ``k`` a cutoff or BM25's k1, which no name should be guessed for.
    """
    if key == "k":
        name = str(algorithm).lower() if algorithm is not None else ""
        if "knn" in name:
            return "Nearest neighbors"
        return "Latent factors" if any(t in name for t in FACTOR_MODEL_NAMES) else "k"
    return HYPERPARAMETER_NAMES.get(key, key)


def ordered(keys: Iterable[str], preferred: Sequence[str]) -> list[str]:
    """Order ``keys``: those in ``preferred`` first in that order, then the rest sorted."""
    unique = {str(k) for k in keys}
    head = [k for k in preferred if k in unique]
    return head + sorted(unique - set(head))


def metric_color(metric: str, extra: list[str] | None = None) -> str:
    """The fixed colour of ``metric``; metrics without one get the next spare colour of
    :data:`EXTRA_COLORS` in first-seen order (``extra`` records that order across calls)."""
    if metric in METRIC_COLORS:
        return METRIC_COLORS[metric]
    extra = [] if extra is None else extra
    if metric not in extra:
        extra.append(metric)
    return EXTRA_COLORS[extra.index(metric) % len(EXTRA_COLORS)]


def fold_key(fold: object) -> tuple[int, int, str]:
    """Sort key of fold labels: ``"0"``, ``"1"``, ..., ``"10"`` numerically, then ``"test"``."""
    text = str(fold)
    return (0, int(text), text) if text.isdigit() else (1, 0, text)


def metric_rank(metric: str) -> int:
    """Position of ``metric`` in :data:`METRICS`; unknown metrics after them."""
    return METRICS.index(metric) if metric in METRICS else len(METRICS)


#: noise_floor.csv ``rule``: what "clearly below the floor" (``flagged`` false) required of a
#: row (:func:`dptune.analysis.noise.compare_with_floor`): with DP's bootstrap interval, the
#: margin of both estimates' errors (a one-sided test); without it, DP below the floor as it
#: is (no test, no error rate). The report says "clearly below" of rows of the first rule only.
RULE_MARGIN = "clearly below if floor - DP > margin"
RULE_PLAIN = "below if DP < floor (no interval: no test, no error rate)"

#: Distance within which two mean p-values (or two points of p-value curves) are one value: the
#: tie rule's tolerance. Two metrics whose per-user values are proportional (Precision@N and
#: Recall@N when every user holds as many relevant items) give the same p-values in exact
#: arithmetic, which floating-point sums can miss in the last bit (0.041639484177975465 and
#: 0.04163948417797548); a real difference of DPs is never this small. On the DP-per-25 scale
#: the same rule is ``25 x TIE_TOL`` (``scale=25``).
TIE_TOL = 1e-12


def tie_value(values: object, scale: float = 1.0) -> object:
    """What the tie rule compares: ``values`` (an array or a Series of mean p-values, or of DPs
    per 25 pairs with ``scale=25``) with every run of values within ``scale x`` :data:`TIE_TOL`
    of the next (in sorted order) given the run's smallest value; NaN stays NaN, a single
    number is itself. So equal-in-exact-arithmetic DPs are one value everywhere (the verdict,
    the dominance answer, the tables, the figures, the slices), and two values one ulp apart
    are never split, as rounding to a number of decimals splits them when they straddle a
    rounding boundary (0.2000000000015 and 0.20000000000149998). The runs are of the values
    given together: compare members of one call's result, never with another call's."""
    import numpy as np
    import pandas as pd

    if np.ndim(values) == 0:
        return values
    flat = np.asarray(values, dtype=float).ravel()
    order = np.argsort(flat, kind="stable")  # NaN last
    s = flat[order]
    n = int(np.count_nonzero(~np.isnan(s)))
    start = np.zeros(len(s), dtype=bool)
    start[:1] = True
    start[1:n] = np.diff(s[:n]) > float(scale) * TIE_TOL
    first = np.maximum.accumulate(np.where(start, np.arange(len(s)), 0))
    out = np.empty_like(flat)
    out[order] = np.where(np.isnan(s), np.nan, s[first])
    out = out.reshape(np.shape(values))
    return pd.Series(out, index=values.index, name=values.name) \
        if isinstance(values, pd.Series) else out


def same_values(a: object, b: object, scale: float = 1.0) -> bool:
    """Whether two arrays (two p-value curves) are one value point by point under the tie rule
    (within ``scale x`` :data:`TIE_TOL`; NaN equals NaN)."""
    import numpy as np

    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return x.shape == y.shape and bool(np.all(
        (np.abs(x - y) <= float(scale) * TIE_TOL) | (np.isnan(x) & np.isnan(y))))


def metric_key(metric: str, cutoff: int) -> tuple[int, str, int]:
    """Sort key of (metric, cutoff) in :data:`METRICS` order, unknown metrics after them."""
    return (metric_rank(metric), metric, int(cutoff))


def value_norm(value: object) -> object:
    """Normalise a hyperparameter value for matching and sorting: a float when it parses."""
    try:
        return float(str(value))
    except ValueError:
        return str(value)


def display_value(value: object) -> str:
    """The one display format of a hyperparameter value in every table and sentence of the
    report: integers as they are, other numbers to 6 significant digits (``0.025000487`` ->
    ``0.0250005``), text as is. CSV files keep the full precision.

    Numbers from 10^-6 up to 10^6 are written without an exponent (``1.2207e-05`` is
    ``0.000012207``), so that the values of one hyperparameter in a row of Table 5 (learning
    rates from 1.2e-05 to 0.2) and in the sentences that name a configuration share one
    notation: a reader compares them by their digits, never an exponent beside a run of
    zeros. Beyond that range, scientific notation (``1e-07``)."""
    norm = value_norm(value)
    if isinstance(norm, float) and math.isfinite(norm) and not norm.is_integer():
        if 1e-6 <= abs(norm) < 1e6:
            return _positional(norm)
        return f"{norm:.6g}"
    if isinstance(norm, float) and math.isfinite(norm) and isinstance(value, float):
        return str(int(norm))
    return str(value)


def _positional(x: float) -> str:
    """``x`` to 6 significant digits without an exponent, trailing zeros dropped."""
    import numpy as np

    return np.format_float_positional(x, precision=6, unique=False, fractional=False,
                                      trim="-")


def display_params(params: object) -> str:
    """A configuration's ``name=value, ...`` text with every value in :func:`display_value`'s
    format (``learning_rate=0.025000487`` -> ``learning_rate=0.0250005``).

    A hyperparameter's name is whatever precedes its first ``=`` (``w*x``, ``$s$``, ``λ``,
    ``learning rate``: a column of an outside configurations file can be named anything), and
    a piece after ``", "`` that holds no ``=`` belongs to the value before it (a text value
    ``a, b``), so that no name or value is dropped. Text that does not start with a
    ``name=`` is returned as it is."""
    text = str(params)
    pairs: list[list[str]] = []
    for piece in text.split(", "):
        name, eq, value = piece.partition("=")
        if eq and name.strip():
            pairs.append([name, value])
        elif pairs:
            pairs[-1][1] += ", " + piece
        else:
            return text
    return ", ".join(f"{name}={display_value(value)}" for name, value in pairs)
