"""Families of metrics: the verdict ranks metrics within a family only, and judges a family's
choices on the test split by a metric of that family.

An accuracy metric and a novelty metric measure different things, so a user tuning for
accuracy is never told to tune with a novelty metric. The families come from the ``families``
option (default: accuracy = nDCG, Precision, Recall, MRR; novelty = EPC, EFD); metrics of no
configured family form the family :data:`OTHER_FAMILY`. The **judge** of a family is the metric
that compares the family's choices on the test split: the primary metric when it is in the
family, else the family's first metric as configured (nDCG for accuracy, EPC for novelty).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pandas as pd

from dptune.analysis.options import DEFAULT_FAMILIES
from dptune.vocab import metric_rank

__all__ = ["Families", "OTHER_FAMILY", "family_groups", "family_judge", "family_judges",
           "order_metrics"]

#: ``(name, metrics)`` per family of metrics, as :class:`dptune.AnalysisOptions` holds them.
Families = Sequence[tuple[str, Sequence[str]]]

#: Name of the family of the metrics that no configured family holds.
OTHER_FAMILY = "other"


def family_groups(metrics: Iterable[str], families: Families = DEFAULT_FAMILIES
                  ) -> list[tuple[str, list[str]]]:
    """``(family, its metrics among metrics)`` in the configured order, metrics in
    :data:`dptune.vocab.METRICS` order; families without any of them left out; metrics of no
    family in a last family :data:`OTHER_FAMILY`."""
    present = sorted(dict.fromkeys(str(m) for m in metrics), key=metric_rank)
    out, used = [], set()
    for name, members in families:
        ms = [m for m in present if m in set(members)]
        used.update(ms)
        if ms:
            out.append((str(name), ms))
    rest = [m for m in present if m not in used]
    if rest:
        out.append((OTHER_FAMILY, rest))
    return out


def family_judge(family: str, metrics: Sequence[str], primary_metric: str,
                 families: Families = DEFAULT_FAMILIES) -> str:
    """The metric that judges a family's choices on the test split (module docstring)."""
    if primary_metric in metrics:
        return primary_metric
    for name, members in families:
        if name == family:
            for m in members:
                if m in metrics:
                    return str(m)
    return str(metrics[0])


def family_judges(families: Families, primary_metric: str) -> list[str]:
    """The judge of every configured family (:func:`family_judge`), in family order."""
    return [family_judge(name, list(ms), primary_metric, families) for name, ms in families]


def order_metrics(frame: pd.DataFrame, value: str = "mean_p") -> pd.DataFrame:
    """Rows sorted by ``value`` ascending (lower = more discriminative), equal values in
    :data:`dptune.vocab.METRICS` order: the one tie rule of the verdict, Tables 3 and 4 and the
    DP figure."""
    return (frame.assign(_o=frame["metric"].map(metric_rank))
            .sort_values([value, "_o"], kind="stable").drop(columns="_o"))
