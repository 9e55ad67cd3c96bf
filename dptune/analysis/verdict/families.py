"""Families of metrics: the verdict ranks metrics within a family only, and judges a family's
choices on the test split by a metric of that family.

An accuracy metric and a novelty metric measure different things, so a user tuning for
accuracy is never told to tune with a novelty metric. The families come from the ``families``
option (default: accuracy = nDCG, Precision, Recall, MRR; novelty = EPC, EFD). A metric that
no configured family holds stays with the metrics of its default family: they form that family
(``novelty`` when the option names no family ``novelty``), or ``other <family>`` when the option
already uses the name (``other novelty``), so that leaving a metric out never ranks a novelty
metric against an accuracy one. The **judge** of a family is the metric that compares the
family's choices on the test split: the primary metric when it is in the family, else the
family's first metric as configured (nDCG for accuracy, EPC for novelty; a family of left-out
metrics in its default family's order).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pandas as pd

from dptune.analysis.options import DEFAULT_FAMILIES
from dptune.vocab import metric_rank, tie_value

__all__ = ["Families", "OTHER_FAMILY", "completed_families", "family_groups", "family_judge",
           "family_judges", "judge_order", "order_metrics"]

#: ``(name, metrics)`` per family of metrics, as :class:`dptune.AnalysisOptions` holds them.
Families = Sequence[tuple[str, Sequence[str]]]

#: Prefix of the name of a family of left-out metrics whose default family's name the
#: ``families`` option already uses (``other novelty``); a metric of no default family (one
#: dptune does not compute, such as a per-user table's ``hit@10``) falls in the family of this
#: name.
OTHER_FAMILY = "other"


def completed_families(metrics: Iterable[str], families: Families = DEFAULT_FAMILIES
                       ) -> list[tuple[str, list[str]]]:
    """The configured ``families`` followed by the families of the ``metrics`` that none of
    them holds, grouped by their default family (module docstring), members in configured
    order (a left-out family in its default family's order)."""
    used = {str(m) for _, members in families for m in members}
    rest = [m for m in dict.fromkeys(str(m) for m in metrics) if m not in used]
    out = [(str(name), [str(m) for m in members]) for name, members in families]

    def free(name: str) -> str:
        """``name``, prefixed with ``other`` until no family has it (a configured family
        named ``other`` keeps its name, and the metrics of no family become ``other other``:
        two families of one name were one in the verdict's judges and two in its rows)."""
        while name in {n for n, _ in out}:
            name = f"{OTHER_FAMILY} {name}"
        return name

    for name, members in DEFAULT_FAMILIES:
        if ms := [m for m in members if m in rest]:
            out.append((free(name), ms))
    defaults = {m for _, members in DEFAULT_FAMILIES for m in members}
    if stray := [m for m in rest if m not in defaults]:
        out.append((free(OTHER_FAMILY), stray))
    return out


def family_groups(metrics: Iterable[str], families: Families = DEFAULT_FAMILIES
                  ) -> list[tuple[str, list[str]]]:
    """``(family, its metrics among metrics)`` in the order of :func:`completed_families`
    (the configured families, then those of the left-out metrics), metrics in
    :data:`dptune.vocab.METRICS` order; families without any of them left out."""
    present = sorted(dict.fromkeys(str(m) for m in metrics), key=metric_rank)
    out = []
    for name, members in completed_families(present, families):
        if ms := [m for m in present if m in set(members)]:
            out.append((name, ms))
    return out


def judge_order(family: str, metrics: Sequence[str], primary_metric: str,
                families: Families = DEFAULT_FAMILIES) -> list[str]:
    """``metrics`` (a family's) in the order in which they judge the family's choices on the
    test split: the primary metric, then the family's members as configured (a left-out
    family's in its default family's order, :func:`completed_families`), then the others as
    given. The judge of the family is the first (:func:`family_judge`)."""
    members = next((ms for name, ms in completed_families(metrics, families) if name == family), [])
    first = [primary_metric] if primary_metric in metrics else []
    return list(dict.fromkeys([*first, *(m for m in members if m in metrics), *map(str, metrics)]))


def family_judge(family: str, metrics: Sequence[str], primary_metric: str,
                 families: Families = DEFAULT_FAMILIES) -> str:
    """The metric that judges a family's choices on the test split (module docstring): the
    first of :func:`judge_order`."""
    return judge_order(family, metrics, primary_metric, families)[0]


def family_judges(families: Families, primary_metric: str, metrics: Iterable[str] = ()
                  ) -> list[str]:
    """The judge of every family of :func:`completed_families` (the configured ones, then
    those of the left-out ``metrics``; :func:`family_judge`), in family order."""
    return [family_judge(name, list(ms), primary_metric, families)
            for name, ms in completed_families(metrics, families)]


def order_metrics(frame: pd.DataFrame, value: str = "mean_p") -> pd.DataFrame:
    """Rows sorted by ``value`` ascending (lower = more discriminative), equal values (within
    :data:`dptune.vocab.TIE_TOL`, :func:`dptune.vocab.tie_value`) in
    :data:`dptune.vocab.METRICS` order: the one tie rule of the verdict, Tables 3 and 4 and the
    DP figure."""
    return (frame.assign(_o=frame["metric"].map(metric_rank), _v=tie_value(frame[value]))
            .sort_values(["_v", "_o"], kind="stable").drop(columns=["_o", "_v"]))
