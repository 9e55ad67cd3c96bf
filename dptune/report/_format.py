"""Number formats and orders of the report: one place for how a value, a setting or a
hyperparameter value is printed and in which order algorithms, metrics and values appear.

Orders and display names come from :mod:`dptune.vocab`; this module only adds the report's
text conventions (3 decimals, an en dash for a missing value, a dagger for fewer pairs).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from dptune.vocab import (
    ALGORITHM_ORDER,
    HYPERPARAMETER_ORDER,
    RULE_MARGIN,
    TABLE_METRIC_ORDER,
    display_algorithm,
    display_hyperparameter,
    display_metric,
    display_params,
    display_value,
    ordered,
    value_norm,
)

__all__ = [
    "and_list",
    "grid_sample_text",
    "MISSING",
    "DP_DECIMALS",
    "NO_INTERVAL",
    "NO_INTERVAL_WHY",
    "FEWER_PAIRS",
    "is_missing",
    "fmt",
    "fmt_setting",
    "flag",
    "value_norm",
    "display_value",
    "display_params",
    "ordered_values",
    "ordered_algorithms",
    "ordered_metrics",
    "ordered_hyperparameters",
    "dp_text",
    "pair_count_text",
    "adjusted_p_text",
    "p_text",
    "on_its_side",
    "pair_seeds_text",
    "pct",
    "pct_is",
    "UNSAMPLED",
    "unsampled_share",
    "unsampled_note",
    "verdict_choices",
    "verdict_keys",
    "one_fold",
    "floor_below",
    "NAME_SPAN",
    "name_span",
    "unmarked",
    "shown_algorithm",
    "shown_metric",
    "shown_hyperparameter",
    "shown_value",
    "shown_params",
]

MISSING = "–"  # shown for a missing value in Markdown (LaTeX gets "--")
#: Why a report has no interval and tests no difference, short (in a parenthesis) and whole.
NO_INTERVAL = "no bootstrap interval"
NO_INTERVAL_WHY = ("the bootstrap is off, or the paired test has no interval; see Bootstrap in "
                   "the settings")
FEWER_PAIRS = "†"  # marks a DP computed on fewer pairs than the others it is compared with
#: Marks a DP of a scope that the units of a grid sample do not cover (``unsampled_share`` > 0
#: in dp.csv): the DP of the pairs there are, not an estimate of the full grid's; never ranked.
UNSAMPLED = "§"


def ordered_algorithms(keys: Iterable[str]) -> list[str]:
    """Order algorithm keys as the paper does (Item-kNN, User-kNN, BPR-MF, then the rest)."""
    return ordered(keys, ALGORITHM_ORDER)


def ordered_metrics(keys: Iterable[str]) -> list[str]:
    """Order metric keys in the paper's Table 3 order, unknown metrics after them."""
    return ordered(keys, TABLE_METRIC_ORDER)


def ordered_hyperparameters(
    keys: Iterable[str], hyperparameter_order: Mapping[str, Sequence[object]] | None
) -> list[str]:
    """Order hyperparameters: keys of ``hyperparameter_order`` first, then the paper's order."""
    preferred = list(hyperparameter_order or {}) + [
        h for h in HYPERPARAMETER_ORDER if h not in (hyperparameter_order or {})
    ]
    return ordered(keys, preferred)


def ordered_values(values: Iterable[str], order: Sequence[object] | None) -> list[str]:
    """Order the value strings of one hyperparameter.

    Values listed in ``order`` come first in that order (matched numerically when both parse as
    numbers, so ``10`` matches ``"10"`` and ``0.1`` matches ``"0.10"``); the remaining values
    follow sorted numerically, non-numeric values last and sorted as text.
    """
    # each normalised value's first position in ``order``, hashed: a grid's thousands of values
    # are looked up in one pass, not searched once per value (as ``list.index`` would)
    given: dict[object, int] = {}
    for i, g in enumerate(value_norm(v) for v in (order or [])):
        given.setdefault(g, i)

    def key(v: str) -> tuple[int, int, float, str]:
        norm = value_norm(v)
        if norm in given:
            return (0, given[norm], 0.0, "")
        if isinstance(norm, float):
            return (1, 0, norm, "")
        return (2, 0, 0.0, str(norm))

    return sorted({str(v) for v in values}, key=key)


def is_missing(x: object) -> bool:
    """True for ``None``/NaN/NA (anything pandas calls missing)."""
    try:
        return bool(pd.isna(x))
    except (TypeError, ValueError):
        return False


#: Decimals of every DP per 25 pairs a report writes, in its tables, sentences and figures
#: alike: a DP read 10.475 in a table and 10.47 in the text read as two roundings of two
#: numbers.
DP_DECIMALS = 3


def fmt(x: object, decimals: int = DP_DECIMALS) -> str:
    """Format a number with a fixed number of decimals (default :data:`DP_DECIMALS`, a DP's);
    missing values as an en dash. A value that rounds to zero is ``0.000``, never ``-0.000``
    (a negative zero, or -1e-12 left by floating-point arithmetic, is no negative number)."""
    if is_missing(x):
        return MISSING
    text = f"{float(x):.{decimals}f}"
    return text[1:] if text.startswith("-") and float(text) == 0.0 else text


def flag(row: Mapping[str, object], key: str) -> bool:
    """A yes/no column of one result row (verdict.csv's ``tested``, dp.csv's ``no_evidence``):
    True for ``True``, ``1`` or the text ``true``/``1`` (a row read back from CSV); missing is
    False."""
    v = row.get(key)
    return False if v is None or is_missing(v) else str(v).strip().lower() in ("true", "1")


def fmt_setting(value: object) -> str:
    """Format one settings value for the settings table (lists joined, floats to 6 digits)."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=str) if isinstance(value, (set, frozenset)) else value
        return ", ".join(fmt_setting(v) for v in items)
    if value is None:
        return MISSING
    return str(value)


def dp_text(value: object, low: object = None, high: object = None,
            decimals: int = DP_DECIMALS) -> str:
    """A DP per 25 pairs with its interval when there is one: ``5.214 [4.102, 6.300]``."""
    text = fmt(value, decimals)
    if not is_missing(low) and not is_missing(high) and low is not None and high is not None:
        text += f" [{fmt(low, decimals)}, {fmt(high, decimals)}]"
    return text


def pair_count_text(n_pairs: object, n_possible: object = None) -> str:
    """``P = 105`` (every pair of the grid) or ``P = 25 of 990`` (a sample)."""
    if is_missing(n_pairs):
        return f"P = {MISSING}"
    n = int(n_pairs)  # type: ignore[call-overload]
    if n_possible is None or is_missing(n_possible) or int(n_possible) <= n:  # type: ignore[call-overload]
        return f"P = {n}"
    return f"P = {n} of {int(n_possible)}"  # type: ignore[call-overload]


def on_its_side(v: float, text: str, alpha: float | None) -> str:
    """``text``, the p-value ``v`` rounded for print, or ``v`` with more significant digits
    when that rounding lands on ``alpha`` or across it: a p-value printed beside a test at
    level ``alpha`` reads on the side of ``alpha`` it is on (0.0498 is printed 0.0498, not 0.05
    next to "significant"; 0.0502 not 0.050 next to "not significant"). ``alpha`` None: ``text``.

        >>> on_its_side(0.0498, "0.05", 0.05), on_its_side(0.0502, "0.050", 0.05)
        ('0.0498', '0.0502')
        >>> on_its_side(0.013, "0.013", 0.05), on_its_side(0.05, "0.05", 0.05)
        ('0.013', '0.05')
    """
    if alpha is None or not np.isfinite(v):
        return text

    def true_side(t: str) -> bool:
        shown = float(t)
        return (shown < alpha) == (v < alpha) and (shown != alpha or v == alpha)

    digits = 3
    while not true_side(text) and digits <= 17:
        text = f"{v:.{digits}g}"
        digits += 1
    return text


def p_text(p: object, alpha: float | None = None) -> str:
    """A p-value to 2 significant digits (``0.013``, ``4.7e-05``, ``0.010``: a trailing zero
    is a digit, so that 0.01005 does not read as known to one digit beside a 0.013), with more
    where they would put it on the other side of the test's level ``alpha``
    (:func:`on_its_side`); missing values as an en dash.

        >>> p_text(0.01005), p_text(0.0999), p_text(1.3e-05), p_text(0.11)
        ('0.010', '0.10', '1.3e-05', '0.11')
    """
    if is_missing(p):
        return MISSING
    v = float(p)  # type: ignore[arg-type]
    return on_its_side(v, f"{v:#.2g}", alpha)


#: The bound printed for a p-value that underflowed to 0 (a test statistic so large that
#: its tail probability is below what a float holds): ``p < 1e-300``, never ``p = 0.0``.
P_FLOOR = 1e-300


def p_clause(p: object, alpha: float | None = None) -> str:
    """``p = 0.013`` (:func:`p_text`); a p-value below :data:`P_FLOOR` (it underflowed to 0 or
    nearly) is ``p < 1e-300``, which is what is known of it, where ``p = 0.0`` read as a
    certainty.

        >>> p_clause(0.013), p_clause(0.0), p_clause(2e-310)
        ('p = 0.013', 'p < 1e-300', 'p < 1e-300')
    """
    if not is_missing(p) and 0.0 <= float(p) < P_FLOOR:  # type: ignore[arg-type]
        return f"p < {P_FLOOR:g}"
    return f"p = {p_text(p, alpha)}"


def adjusted_p_text(p: object, smallest: float | None = None,
                    alpha: float | None = None) -> str:
    """``adjusted p = 0.013``; at ``smallest``, the smallest value the bootstrap can give (the
    result's :attr:`~dptune.analysis.result.AnalysisResult.smallest_adjusted_p`; None without
    a bootstrap), ``adjusted p <= 0.001``. ``alpha``: the claims' family-wise level, which the
    printed value is never rounded onto or across (:func:`on_its_side`). From 0.01 on (as
    printed) to 3 decimals, below to 2 significant digits: 0.00999 reads ``0.010`` as 0.0101
    does, not ``0.01``.

        >>> adjusted_p_text(0.00999), adjusted_p_text(0.0101), adjusted_p_text(0.002)
        ('adjusted p = 0.010', 'adjusted p = 0.010', 'adjusted p = 0.002')
    """
    if is_missing(p):
        return f"adjusted p {MISSING}"
    v = float(p)  # type: ignore[arg-type]
    if smallest and v <= smallest + 1e-15:
        return f"adjusted p <= {smallest:.2g}"
    text = f"{v:.2g}"
    if float(text) >= 0.01:  # rounded up to 0.01: printed as the values from 0.01 on are
        text = f"{v:.3f}"
    return "adjusted p = " + on_its_side(v, text, alpha)


def pair_seeds_text(repeats: int, requested: int, sampled: bool) -> str:
    """How many pair seeds a claim was checked under, said beside it (``", under all 5 pair
    seeds"``), or ``""`` when its pairs are every pair of the grid (there is no other pair set
    to check it on). ``repeats``: the stability repeats run (dp.csv's ``repeats``);
    ``requested``: the ``stability`` option (0 and 1 both mean one seed); ``sampled``: the
    scope's pairs are a sample of the grid's.

        >>> pair_seeds_text(5, 5, True), pair_seeds_text(5, 5, False)
        (', under all 5 pair seeds', '')
        >>> pair_seeds_text(2, 5, True)
        ', under 2 of the 5 pair seeds asked for: more would have exceeded the time budget of the stability check'
        >>> pair_seeds_text(1, 0, True)
        ', under 1 pair seed: the stability check is off'
    """
    repeats, requested = int(repeats), max(1, int(requested))
    if not sampled:
        return ""
    if requested == 1:
        return ", under 1 pair seed: the stability check is off"
    if repeats >= requested:
        return f", under all {repeats} pair seeds"
    return (f", under {repeats} of the {requested} pair seeds asked for: more would have "
            "exceeded the time budget of the stability check")


def and_list(items: Sequence[str]) -> str:
    """Items as a sentence lists them: ``a``, ``a and b``, ``a, b and c`` (at least one)."""
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def pct(x: object, decimals: int = 0) -> str:
    """A share as a percent, whole by default: ``93%``. A share strictly between 0 and 1 is
    never written as the whole or none of it: 0.997 is ``>99%`` and 0.003 ``<1%``, since
    "Pr(more discriminative) = 100%" beside a difference that is not significant reads as
    certain; with ``decimals = 2`` (a data set's sparsity) 0.99996 is ``>99.99%``, not
    ``100.00%``, which reads as a matrix without a rating.

        >>> pct(0.934), pct(0.997), pct(0.003), pct(0.99996, 2), pct(0.9553, 2)
        ('93%', '>99%', '<1%', '>99.99%', '95.53%')
    """
    if is_missing(x):
        return MISSING
    share = float(x)  # type: ignore[arg-type]
    text = f"{100.0 * share:.{decimals}f}%"
    step = 10.0 ** -decimals
    if text == f"{100.0:.{decimals}f}%" and share < 1.0:
        return f">{100.0 - step:.{decimals}f}%"
    if text == f"{0.0:.{decimals}f}%" and share > 0.0:
        return f"<{step:.{decimals}f}%"
    return text


def pct_is(x: object) -> str:
    """A bootstrap share (Pr(more discriminative)) after its name: ``= 93%``, ``> 99%``,
    ``< 1%``. A share of a finite number of replicates is never written as certain, not even
    when every replicate agrees: 1.0 is ``> 99%`` and 0.0 ``< 1%`` (``= 100%`` beside a claim
    that is not significant reads as a certainty contradicting it)."""
    share = None if is_missing(x) else float(x)  # type: ignore[arg-type]
    if share is not None and share >= 1.0:
        return "> 99%"
    if share is not None and share <= 0.0:
        return "< 1%"
    text = pct(x)
    return f"{text[0]} {text[1:]}" if text[:1] in "<>" and text != MISSING else f"= {text}"


def unsampled_share(rows: pd.DataFrame) -> pd.Series:
    """dp.csv's ``unsampled_share`` of each row (0 where the column is absent or empty): the
    share of the full grid's pairs of the row's scope that the units present cannot stand for."""
    if "unsampled_share" not in rows.columns:
        return pd.Series(0.0, index=rows.index)
    return pd.to_numeric(rows["unsampled_share"], errors="coerce").fillna(0.0)


def unsampled_note(shares: Sequence[float]) -> list[str]:
    """The note for DPs marked :data:`UNSAMPLED` (scopes a grid sample's units do not cover),
    with the range of their uncovered shares; none when no DP is marked."""
    marked = [float(x) for x in shares if float(x) > 0]
    if not marked:
        return []
    lo, hi = min(marked), max(marked)
    share = pct(lo) if pct(lo) == pct(hi) else f"{pct(lo)} to {pct(hi)}"
    return [f"{UNSAMPLED} {share} of the full grid's pairs of this scope (pairs of units that "
            "share a value of a unit hyperparameter) have no stand-in among the units run: the "
            "DP of the pairs there are, not an estimate of the full grid's; shown, never ranked "
            "(unsampled_share in dp.csv)."]


def grid_sample_text(grid_sample: pd.DataFrame | None, marked: bool = True) -> str | None:
    """What the analysis holds of each algorithm's grid when a store holds a subset of its
    units (grid_sample.csv): "BPR-MF: 45 of 225 units per fold (20%; full grid: 3,150
    configurations, 630 here)", and how the numbers stand for the full grid's; None when every
    grid is complete. The one wording of the lead, the summary, the verdict, the tables'
    notes and the settings. ``marked``: whether it explains the mark :data:`UNSAMPLED` (the
    settings, the lead); not in the summary and the verdict, which show no marked DP, nor in a
    table's notes: a table that marks a DP says so in a note of its own
    (:func:`unsampled_note`)."""
    if grid_sample is None or grid_sample.empty:
        return None
    parts = []
    for r in grid_sample.to_dict("records"):
        share = 100.0 * int(r["units"]) / max(1, int(r["units_total"]))
        text = (f"{display_algorithm(str(r['algorithm']))}: {int(r['units'])} of "
                f"{int(r['units_total']):,} units per fold ({share:.0f}%; full grid: "
                f"{int(r['configs_total']):,} configurations, {int(r['configs']):,} here)")
        if int(r["units_partial"]):
            text += (f", {int(r['units_partial'])} unit{'s' if int(r['units_partial']) != 1 else ''}"
                     " with results in some folds only left out")
        parts.append(text)
    return ("Grid sample: " + "; ".join(parts) + " (a unit: one model trained per fold, with "
            "every configuration it serves at once, such as its iteration snapshots). Each DP "
            "of these algorithms estimates the "
            "full grid's: its pairs are weighted by the share of the full grid's pairs they "
            "stand for, and its interval also resamples the units."
            + (f" A DP marked {UNSAMPLED} cannot: part of the full grid's pairs of its scope "
               "(pairs of units that share a value of a unit hyperparameter) has no stand-in "
               "among the units run, so it is the DP of the pairs there are, without interval "
               "or claim (unsampled_share in dp.csv)." if marked else ""))


def one_fold(rows: pd.DataFrame | Mapping[str, object]) -> bool:
    """Whether DP rows (dp.csv's, or one row) rest on one fold: no spread over folds, so no sd
    is shown (its 0 is no number) and nothing says one is."""
    if isinstance(rows, pd.DataFrame):
        return "n_folds" in rows.columns and len(rows) > 0 and int(rows["n_folds"].max()) < 2
    n = rows.get("n_folds")
    return n is not None and not is_missing(n) and int(n) < 2  # type: ignore[arg-type]


def floor_below(versus: pd.DataFrame | None, negated: bool = False) -> str:
    """How "below its A/A noise floor" is said of some of noise_floor.csv's rows, by the rule
    the analysis decided each by (``rule``): :data:`~dptune.vocab.RULE_MARGIN`, DP has an
    interval and the comparison is a test at about 2.5%; :data:`~dptune.vocab.RULE_PLAIN`, no
    interval and no test.

    Of rows that are below (``negated`` false): ``clearly below`` only when every row was
    tested, else ``below``, so that no sentence lends the test's words to a row that had
    none. Of rows that are not (``not ...``, ``negated``): ``below`` only when no row was
    tested (not below at all), else ``clearly below`` (a tested row may be below, only not
    clearly; an untested one is not below, so not clearly below either). With no rows, the
    tested words."""
    if versus is None or len(versus) == 0:
        return "clearly below"
    tested = (versus["rule"] == RULE_MARGIN if "rule" in versus.columns
              else versus["ci_high"].notna())
    clearly = bool(tested.any()) if negated else bool(tested.all())
    return "clearly below" if clearly else "below"


def verdict_keys(value: object) -> list[str]:
    """The metric keys of one of the verdict's lists (``identical``, ``tied``, ``choices``,
    ...: a list in the result); none when it is missing or empty, one key when it is a
    string (a row made by hand)."""
    if isinstance(value, (list, tuple, np.ndarray, pd.Series)):
        return [str(k) for k in value if str(k)]
    if value is None or is_missing(value) or not str(value):
        return []
    return [str(value)]


def verdict_choices(row: Mapping[str, object]) -> list[str]:
    """The metrics one verdict row recommends as equal choices, the lowest DP first: its
    ``choices`` (the recommended metric and every metric not significantly less discriminative
    than it); none when it recommends none (too few pairs, no evidence). The one reading of the
    verdict's choices for Table 3's bold, the DP figure's stars, the verdict table and the
    summary. A row without ``choices`` (made by hand) offers its recommended metric and its
    exact ties."""
    rec = row.get("recommended")
    if is_missing(rec) or not str(rec):
        return []
    return verdict_keys(row.get("choices")) or [str(rec), *verdict_keys(row.get("identical"))]


#: The two characters that hold a name in the report's text until it is rendered
#: (:func:`name_span`): Shift Out and Shift In, which no name keeps (:func:`name_span` drops
#: them from the name it holds).
_NAME_START, _NAME_END = "\x0e", "\x0f"
#: A span of :func:`name_span` in a text (its name: group 1).
NAME_SPAN = re.compile(f"{_NAME_START}([^{_NAME_START}{_NAME_END}]*){_NAME_END}")


def name_span(text: object) -> str:
    """``text``, a name as the data writes it (an algorithm, a metric, a hyperparameter, a
    value), held as a name in the report's text until the text is rendered.

    The report's sentences are Markdown: ``**`` for bold, ``*`` for a defined term, backticks
    for a file. A name is not: ``_lam_``, ``w*x*y`` or ``$s$`` must read as written, not as
    emphasis or mathematics. So every display name enters a sentence as a span, and the one
    helper that builds the sentence need not know which format it ends in:
    :func:`dptune.report._table.md_names` escapes each span of a Markdown text, and
    :func:`unmarked` drops the spans' two characters for every other format (a table cell,
    which is escaped whole, LaTeX, a figure's label)."""
    text = unmarked(text)
    return _NAME_START + text + _NAME_END if text else ""


def unmarked(text: object) -> str:
    """``text`` without the characters of :func:`name_span`: its names as written."""
    return str(text).replace(_NAME_START, "").replace(_NAME_END, "")


def shown_algorithm(key: object) -> str:
    """An algorithm's display name (:func:`dptune.vocab.display_algorithm`) as a name of the
    report's text (:func:`name_span`)."""
    return name_span(display_algorithm(str(key)))


def shown_metric(metric: object, cutoff: int | None = None) -> str:
    """A metric's display name (:func:`dptune.vocab.display_metric`, ``nDCG@10``) as a name of
    the report's text (:func:`name_span`)."""
    return name_span(display_metric(str(metric), cutoff))


def shown_hyperparameter(key: object, algorithm: str | None = None) -> str:
    """A hyperparameter's display name (:func:`dptune.vocab.display_hyperparameter`) as a name
    of the report's text (:func:`name_span`)."""
    return name_span(display_hyperparameter(str(key), algorithm))


def shown_value(value: object) -> str:
    """A hyperparameter value in its one display format (:func:`dptune.vocab.display_value`)
    as a name of the report's text (:func:`name_span`): a text value can be anything."""
    return name_span(display_value(value))


def shown_params(params: object) -> str:
    """A configuration's ``name=value, ...`` (:func:`dptune.vocab.display_params`) as a name of
    the report's text (:func:`name_span`)."""
    return name_span(display_params(params))
